import { execFileSync } from 'node:child_process';

/**
 * Integration tests run against real MongoDB-compatible, NATS, Redis and S3 servers. They come
 * from the environment (`eval "$(scripts/infra env)"`, which `npm test` does), else from
 * testcontainers when a container runtime answers.
 */
const REQUIRED = ['MONGO_URL', 'NATS_URL', 'REDIS_URL', 'S3_ENDPOINT'] as const;

function dockerAvailable(): boolean {
  try {
    execFileSync('docker', ['info'], { stdio: 'ignore', timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

export default async function globalSetup(): Promise<void> {
  if (REQUIRED.every((name) => process.env[name])) return;
  if (!dockerAvailable()) {
    throw new Error(
      `Integration tests need ${REQUIRED.join(', ')}. Run them with \`npm test\`, or start the ` +
        'local infrastructure with `scripts/infra up` and `eval "$(scripts/infra env)"` first.',
    );
  }
  const { GenericContainer, Wait } = await import('testcontainers');
  const s3Keys = { accessKeyId: 'waybill', secretAccessKey: 'waybill-local-secret' };
  const [mongo, nats, redis, s3] = await Promise.all([
    new GenericContainer('mongo:8').withExposedPorts(27017).start(),
    new GenericContainer('nats:2.10').withExposedPorts(4222).start(),
    new GenericContainer('redis:7-alpine')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start(),
    new GenericContainer('versity/versitygw:latest')
      .withCommand(['posix', '/tmp'])
      .withEnvironment({
        ROOT_ACCESS_KEY_ID: s3Keys.accessKeyId,
        ROOT_SECRET_ACCESS_KEY: s3Keys.secretAccessKey,
        VGW_PORT: ':7070',
      })
      .withExposedPorts(7070)
      .withWaitStrategy(Wait.forListeningPorts())
      .start(),
  ]);
  process.env.MONGO_URL = `mongodb://${mongo.getHost()}:${mongo.getMappedPort(27017)}`;
  process.env.NATS_URL = `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`;
  process.env.REDIS_URL = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
  process.env.S3_ENDPOINT = `http://${s3.getHost()}:${s3.getMappedPort(7070)}`;
  process.env.S3_REGION = 'us-east-1';
  process.env.S3_BUCKET = 'waybill';
  process.env.S3_ACCESS_KEY_ID = s3Keys.accessKeyId;
  process.env.S3_SECRET_ACCESS_KEY = s3Keys.secretAccessKey;
  const { S3Client, CreateBucketCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint: process.env.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: s3Keys,
  });
  await client.send(new CreateBucketCommand({ Bucket: 'waybill' }));
  client.destroy();
  // testcontainers' reaper removes the containers when this process exits.
}

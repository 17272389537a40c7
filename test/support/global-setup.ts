import { execFileSync } from 'node:child_process';

/**
 * Integration tests run against real MongoDB-compatible, NATS and Redis servers. They come
 * from the environment (`eval "$(scripts/infra env)"`, which `npm test` does), else from
 * testcontainers when a container runtime answers.
 */
const REQUIRED = ['MONGO_URL', 'NATS_URL', 'REDIS_URL'] as const;

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
  const [mongo, nats, redis] = await Promise.all([
    new GenericContainer('mongo:8').withExposedPorts(27017).start(),
    new GenericContainer('nats:2.10').withExposedPorts(4222).start(),
    new GenericContainer('redis:7-alpine')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start(),
  ]);
  process.env.MONGO_URL = `mongodb://${mongo.getHost()}:${mongo.getMappedPort(27017)}`;
  process.env.NATS_URL = `nats://${nats.getHost()}:${nats.getMappedPort(4222)}`;
  process.env.REDIS_URL = `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`;
  // testcontainers' reaper removes the containers when this process exits.
}

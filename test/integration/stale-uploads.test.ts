import { randomUUID } from 'node:crypto';
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { newFileKey } from '../../libs/contracts/file';
import { FileStorage } from '../../services/file/store';
import { eventually } from '../support/eventually';
import { directS3 } from '../support/s3';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * A file service killed while storing a file leaves its multipart upload: parts billed, never
 * an object. The file service aborts the hosted files' uploads begun longer ago than
 * FILE_STALE_UPLOAD_MS, and nothing else. In a bucket of this suite's own: the sweep's clock is
 * made short here, and would abort other suites' uploads under way.
 */
const bucket = `stale-${randomUUID().slice(0, 8)}`;
const s3Config = {
  endpoint: process.env.S3_ENDPOINT as string,
  region: process.env.S3_REGION ?? 'us-east-1',
  bucket,
  accessKeyId: process.env.S3_ACCESS_KEY_ID,
  secretAccessKey: process.env.S3_SECRET_ACCESS_KEY,
  timeoutMs: 10_000,
};
let s3: S3Client;
let storage: FileStorage;

beforeAll(async () => {
  s3 = directS3();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  storage = new FileStorage(s3Config, 2);
});

afterAll(async () => {
  await storage.abortUploadsBegunBefore(new Date(Date.now() + 60_000));
  await s3.send(new DeleteBucketCommand({ Bucket: bucket })).catch(() => undefined);
  storage.destroy();
  s3.destroy();
});

/** A multipart upload begun now under `key`, with one part stored, as a killed process leaves it. */
async function begin(key = newFileKey(randomUUID(), 'png')): Promise<string> {
  const { UploadId } = await s3.send(
    new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: 'image/png' }),
  );
  await s3.send(
    new UploadPartCommand({
      Bucket: bucket,
      Key: key,
      UploadId,
      PartNumber: 1,
      Body: Buffer.alloc(1024, 1),
    }),
  );
  return UploadId as string;
}

async function openUploads(): Promise<string[]> {
  const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
  return (listed.Uploads ?? []).map((u) => u.UploadId as string).sort();
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it('aborts the hosted files’ uploads begun before the time given, once, and nothing else', async () => {
  const stale = [await begin(), await begin()];
  const elsewhere = await begin(`other/${randomUUID()}.bin`);
  // S3 servers keep the start to the second.
  await pause(1_100);
  const cut = new Date();
  await pause(1_100);
  const fresh = await begin();

  expect(await storage.abortUploadsBegunBefore(cut)).toBe(2);
  expect(await openUploads()).toEqual([elsewhere, fresh].sort());
  expect(stale.some((id) => [elsewhere, fresh].includes(id))).toBe(false);
  expect(await storage.abortUploadsBegunBefore(cut)).toBe(0);
});

describe('the file service', () => {
  const iso = isolation();
  let node: NodeProcess;

  afterAll(async () => {
    await node?.stop();
    await dropDatabases(iso);
  });

  it('aborts stale uploads by itself, every FILE_UPLOAD_SWEEP_INTERVAL_MS', async () => {
    const before = await openUploads();
    node = await startNode({
      services: 'file',
      iso,
      env: {
        S3_BUCKET: bucket,
        // The config wants the age longer than an upload may be written to: FILE_TIMEOUT_MS
        // and six S3_TIMEOUT_MS (3.4 s here).
        FILE_TIMEOUT_MS: '1000',
        S3_TIMEOUT_MS: '400',
        FILE_STALE_UPLOAD_MS: '4000',
        FILE_UPLOAD_SWEEP_INTERVAL_MS: '300',
        LOG_LEVEL: 'info',
      },
    });
    const left = await begin();
    await eventually(
      async () => {
        const open = await openUploads();
        expect(open).not.toContain(left);
        // The one outside the hosted files' prefix stays, however old.
        expect(open).toHaveLength(before.length - 1);
      },
      { timeout: 15_000, interval: 300 },
    );
    expect(node.output()).toMatch(/stale multipart uploads aborted/);
  });
});

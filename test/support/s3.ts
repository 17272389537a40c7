import type { S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../services/file/store';

/** The bucket `scripts/infra` made for the tests and benchmarks. */
export const S3_BUCKET = process.env.S3_BUCKET ?? 'waybill';

/** A client of the S3 server `scripts/infra` runs (S3_* of its environment), straight to it. */
export function directS3(timeoutMs = 10_000): S3Client {
  return createS3Client({
    endpoint: process.env.S3_ENDPOINT as string,
    region: process.env.S3_REGION ?? 'us-east-1',
    bucket: S3_BUCKET,
    accessKeyId: process.env.S3_ACCESS_KEY_ID,
    secretAccessKey: process.env.S3_SECRET_ACCESS_KEY,
    timeoutMs,
  });
}

import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
} from '@aws-sdk/client-s3';
import { S3_ATTEMPTS, type Config } from '../../libs/config';
import { KEY_PREFIX } from '../../libs/contracts/file';
import { isWaybillError, notFound, serviceUnavailable, type WaybillError } from '../../libs/errors';
import { uploadParts } from './part-upload';

/** Smallest part S3 accepts; parts are held in memory while they upload. */
export const PART_SIZE = 5 * 1024 * 1024;
/** Parts of one file uploading at once: memory per upload is (this + 1) × PART_SIZE. */
export const PART_QUEUE = 2;

export const STORAGE_UNAVAILABLE = 'File storage is unavailable; retry in a few seconds';

/**
 * An S3 client of the file service: path-style, checksums only where S3 requires them; with
 * `maxSockets`, at most that many connections (the SDK's default is 50). An idle connection is
 * given up after S3_TIMEOUT_MS, unless `idleTimeout` is false: downloads', whose body waits on
 * the client reading it, are bounded by FILE_TIMEOUT_MS instead (`FileStorage.get`).
 */
export function createS3Client(
  s3: Config['s3'],
  maxSockets?: number,
  { idleTimeout = true } = {},
): S3Client {
  const agent = maxSockets === undefined ? {} : { maxSockets, keepAlive: true };
  return new S3Client({
    endpoint: s3.endpoint,
    region: s3.region,
    // Local and self-hosted S3 servers (versitygw, MinIO) are addressed by path.
    forcePathStyle: true,
    credentials:
      s3.accessKeyId && s3.secretAccessKey
        ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
        : undefined,
    // SDK ≥ 3.729 adds CRC checksums that S3-compatible servers may not know.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: S3_ATTEMPTS,
    requestHandler: {
      connectionTimeout: s3.timeoutMs,
      // 0: none (the SDK would otherwise apply a default of its own).
      socketTimeout: idleTimeout ? s3.timeoutMs : 0,
      ...(maxSockets === undefined ? {} : { httpAgent: agent, httpsAgent: agent }),
    },
  });
}

interface S3ErrorLike {
  name?: unknown;
  Code?: unknown;
}

/**
 * What a client sees for a storage failure: a missing object is 404; anything else (server
 * down, timeout, missing bucket, refused credentials) is ours to fix, so 503. Our own typed
 * errors pass through.
 */
export function storageError(err: unknown): WaybillError {
  if (isWaybillError(err)) return err;
  const e = (err ?? {}) as S3ErrorLike;
  const name = typeof e.name === 'string' ? e.name : typeof e.Code === 'string' ? e.Code : '';
  if (name === 'NoSuchKey' || name === 'NotFound') return notFound('File not found');
  return serviceUnavailable(STORAGE_UNAVAILABLE);
}

export interface StoredObject {
  body: Readable;
  contentLength?: number;
  contentType?: string;
}

export interface ListedObject {
  key: string;
  size: number;
  lastModified: Date | null;
}

/** The bucket of hosted files. Every method throws typed errors (see storageError). */
export class FileStorage {
  readonly client: S3Client;
  /**
   * Downloads' own connections, as many as downloads may run (FILE_MAX_DOWNLOADS): a client
   * reading slowly holds its connection, and with one pool slow downloads would leave uploads
   * and the readiness check waiting for a socket.
   */
  private readonly reads: S3Client;

  constructor(
    private readonly s3: Config['s3'],
    maxDownloads: number,
    private readonly onError: (operation: string, err: unknown) => void = () => undefined,
  ) {
    this.client = createS3Client(s3);
    this.reads = createS3Client(s3, maxDownloads, { idleTimeout: false });
  }

  private fail(operation: string, err: unknown): never {
    const mapped = storageError(err);
    if (mapped.code >= 500) this.onError(operation, err);
    throw mapped;
  }

  /**
   * Streams `body` into `key`, a part at a time, so memory stays flat whatever the size.
   * Resolves once the object exists. Destroying `body` aborts: the multipart upload is
   * aborted and this rejects only after every request of the upload has settled.
   */
  async put(key: string, body: Readable, contentType: string): Promise<void> {
    try {
      await uploadParts(body, {
        client: this.client,
        bucket: this.s3.bucket,
        key,
        contentType,
        partSize: PART_SIZE,
        queueSize: PART_QUEUE,
      });
    } catch (err) {
      this.fail('upload', err);
    }
  }

  /**
   * The objects whose keys start with `prefix`, in key order, at most `limit` (S3 lists at most
   * 1000 a page), after the key `after` when given; `more` when the listing went on past them.
   */
  async list(
    prefix: string,
    { limit, after }: { limit: number; after?: string },
  ): Promise<{ objects: ListedObject[]; more: boolean }> {
    try {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.s3.bucket,
          Prefix: prefix,
          MaxKeys: limit,
          ...(after === undefined ? {} : { StartAfter: after }),
        }),
      );
      const objects = (page.Contents ?? []).flatMap(({ Key, Size, LastModified }) =>
        Key ? [{ key: Key, size: Size ?? 0, lastModified: LastModified ?? null }] : [],
      );
      return { objects, more: page.IsTruncated === true };
    } catch (err) {
      this.fail('list', err);
    }
  }

  /** Whether the object exists. */
  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.s3.bucket, Key: key }));
      return true;
    } catch (err) {
      if (storageError(err).code === 404) return false;
      this.fail('head', err);
    }
  }

  /** Deletes one object (a missing one is fine); a failure is thrown (503). */
  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.s3.bucket, Key: key }));
    } catch (err) {
      this.fail('delete', err);
    }
  }

  /**
   * The object's headers within S3_TIMEOUT_MS; its body as fast as the client reads it: a
   * client that pauses longer than S3_TIMEOUT_MS is not cut (the SDK's idle timeout would
   * have destroyed the body), the download's FILE_TIMEOUT_MS bounds it (`download`).
   */
  async get(key: string): Promise<StoredObject> {
    const headers = new AbortController();
    const late = setTimeout(() => headers.abort(), this.s3.timeoutMs);
    try {
      const object = await this.reads
        .send(new GetObjectCommand({ Bucket: this.s3.bucket, Key: key }), {
          abortSignal: headers.signal,
        })
        .finally(() => clearTimeout(late));
      if (!object.Body) throw notFound('File not found');
      return {
        body: object.Body as Readable,
        contentLength: object.ContentLength,
        contentType: object.ContentType,
      };
    } catch (err) {
      this.fail('download', err);
    }
  }

  /**
   * Aborts the multipart uploads of hosted files begun before `before`, and answers how many.
   * An upload that ends, well or not, completes or aborts its own; a process killed while
   * storing one leaves it, its parts billed but never an object nor listed with the files.
   * Another replica aborting it first is no failure.
   */
  async abortUploadsBegunBefore(before: Date): Promise<number> {
    const Bucket = this.s3.bucket;
    let aborted = 0;
    let markers: { KeyMarker?: string; UploadIdMarker?: string } = {};
    for (;;) {
      const page = await this.client.send(
        new ListMultipartUploadsCommand({ Bucket, Prefix: `${KEY_PREFIX}/`, ...markers }),
      );
      for (const { Key, UploadId, Initiated } of page.Uploads ?? []) {
        if (!Key || !UploadId || !Initiated || Initiated >= before) continue;
        try {
          await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
          aborted += 1;
        } catch (err) {
          if ((err as S3ErrorLike).name !== 'NoSuchUpload') throw err;
        }
      }
      const next = { KeyMarker: page.NextKeyMarker, UploadIdMarker: page.NextUploadIdMarker };
      // A server that says there is more without saying from where would be asked forever.
      const moved =
        next.KeyMarker !== markers.KeyMarker || next.UploadIdMarker !== markers.UploadIdMarker;
      if (!page.IsTruncated || !moved) return aborted;
      markers = next;
    }
  }

  /** Readiness: the bucket answers within S3_TIMEOUT_MS. */
  async ready(): Promise<boolean> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.s3.bucket }), {
        abortSignal: AbortSignal.timeout(this.s3.timeoutMs),
      });
      return true;
    } catch {
      return false;
    }
  }

  destroy(): void {
    this.client.destroy();
    this.reads.destroy();
  }
}

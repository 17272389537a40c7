import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';

export interface PartUploadOptions {
  client: S3Client;
  bucket: string;
  key: string;
  contentType: string;
  /** Bytes per part (S3's smallest is 5 MiB); parts are held in memory while they upload. */
  partSize: number;
  /** Parts uploading at once. */
  queueSize: number;
}

/**
 * Streams `body` into one object, a part at a time, like lib-storage's `Upload`, except that
 * the parts are copied into `queueSize + 1` buffers reused for the whole upload. `Upload`
 * joins each part's chunks into a new buffer: 200 MB through it allocated 400 MB, which V8
 * collects late (docs/performance.md "File bytes"); here the only garbage is the body's own
 * chunks. A body of at most one part is one PutObject.
 *
 * A failure (the body's error, or S3's) stops reading, aborts the requests in flight, waits
 * for every one to settle, then aborts the multipart upload, and rejects with the failure.
 */
export async function uploadParts(body: Readable, options: PartUploadOptions): Promise<void> {
  const { client, bucket, key, partSize, queueSize } = options;
  const abort = new AbortController();
  const free: Buffer[] = [];
  const inFlight = new Set<Promise<void>>();
  const completed: CompletedPart[] = [];
  let uploadId: string | undefined;
  let failure: { error: unknown } | undefined;
  let chunks: Buffer[] = [];
  let length = 0;
  let partNumber = 0;

  /** The first `size` bytes held, copied into a part buffer; the rest stays held. */
  const takePart = (size: number): Buffer => {
    const part = free.pop() ?? Buffer.allocUnsafe(partSize);
    let filled = 0;
    while (filled < size) {
      const chunk = chunks[0];
      const n = Math.min(chunk.length, size - filled);
      chunk.copy(part, filled, 0, n);
      filled += n;
      if (n === chunk.length) chunks.shift();
      else chunks[0] = chunk.subarray(n);
    }
    length -= size;
    return part;
  };

  const fail = (error: unknown) => {
    failure ??= { error };
    abort.abort();
  };

  /** Sends a part once fewer than `queueSize` are in flight; its buffer is free again after. */
  const sendPart = async (part: Buffer, size: number) => {
    while (inFlight.size >= queueSize && !failure) await Promise.race(inFlight);
    if (failure) throw failure.error;
    uploadId ??= (
      await client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          ContentType: options.contentType,
        }),
        { abortSignal: abort.signal },
      )
    ).UploadId;
    const PartNumber = ++partNumber;
    const sent = client
      .send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber,
          Body: part.subarray(0, size),
          ContentLength: size,
        }),
        { abortSignal: abort.signal },
      )
      .then(({ ETag }) => {
        completed.push({ PartNumber, ETag });
        free.push(part);
      }, fail)
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };

  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (failure) throw failure.error;
      chunks.push(chunk);
      length += chunk.length;
      // A full part goes once a byte more has come: the last part may then be any size.
      while (length > partSize) await sendPart(takePart(partSize), partSize);
    }
    if (partNumber === 0) {
      const whole = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, length);
      chunks = [];
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: whole,
          ContentLength: whole.length,
          ContentType: options.contentType,
        }),
        { abortSignal: abort.signal },
      );
      return;
    }
    const size = length;
    await sendPart(takePart(size), size);
    await Promise.all(inFlight);
    if (failure) throw failure.error;
    completed.sort((a, b) => (a.PartNumber ?? 0) - (b.PartNumber ?? 0));
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: completed },
      }),
    );
  } catch (err) {
    fail(err);
    await Promise.allSettled(inFlight);
    if (uploadId) {
      await client
        .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
        .catch(() => undefined);
    }
    throw (failure as { error: unknown }).error;
  }
}

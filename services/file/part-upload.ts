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

/** Detaches an ArrayBuffer, freeing its memory at once (ES2024; TS's lib here is ES2023). */
type Detachable = ArrayBuffer & { transfer(newByteLength: number): ArrayBuffer };

/**
 * Gives a part buffer's memory back now. A part buffer lives through a whole upload, so V8
 * has moved it to the old generation by the end, where only a full collection would free it;
 * over a few uploads that garbage was the file service's largest growth (docs/performance.md
 * "File bytes"). Only a buffer whose requests have all settled may be released.
 */
function release(part: Buffer): void {
  (part.buffer as Detachable).transfer(0);
}

/**
 * Streams `body` into one object, a part at a time, like lib-storage's `Upload`, except that
 * each chunk is copied as it comes into one of `queueSize + 1` part buffers reused for the
 * whole upload and freed at its end. `Upload` holds a part's chunks, then joins them into a
 * new buffer: 200 MB through it allocated 400 MB, which V8 collects late; here a chunk is
 * garbage as soon as it is copied, young enough for the next minor collection to free. A body
 * of at most one part is one PutObject.
 *
 * A failure (the body's error, or S3's) stops reading, aborts the requests in flight, waits
 * for every one to settle, then aborts the multipart upload, and rejects with the failure.
 */
export async function uploadParts(body: Readable, options: PartUploadOptions): Promise<void> {
  const { client, bucket, key, partSize, queueSize } = options;
  const abort = new AbortController();
  /** Part buffers no request holds: the one being filled comes from here. */
  const free: Buffer[] = [];
  const inFlight = new Set<Promise<void>>();
  const completed: CompletedPart[] = [];
  let uploadId: string | undefined;
  let failure: { error: unknown } | undefined;
  let part: Buffer | undefined;
  let filled = 0;
  let partNumber = 0;

  const fail = (error: unknown) => {
    failure ??= { error };
    abort.abort();
  };

  /** Sends a part once fewer than `queueSize` are in flight; its buffer is free again after. */
  const sendPart = async (buffer: Buffer, size: number) => {
    try {
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
    } catch (err) {
      free.push(buffer); // never sent, so no request holds it: freed with the others
      throw err;
    }
    const PartNumber = ++partNumber;
    const sent = client
      .send(
        new UploadPartCommand({
          Bucket: bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber,
          Body: buffer.subarray(0, size),
          ContentLength: size,
        }),
        { abortSignal: abort.signal },
      )
      .then(({ ETag }) => {
        completed.push({ PartNumber, ETag });
        free.push(buffer);
      }, fail)
      .finally(() => inFlight.delete(sent));
    inFlight.add(sent);
  };

  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      if (failure) throw failure.error;
      for (let offset = 0; offset < chunk.length;) {
        // A full part goes once a byte more has come: the last part may then be any size.
        if (part && filled === partSize) {
          const full = part;
          part = undefined;
          filled = 0;
          await sendPart(full, partSize);
        }
        part ??= free.pop() ?? Buffer.allocUnsafeSlow(partSize);
        const n = chunk.copy(part, filled, offset);
        filled += n;
        offset += n;
      }
    }
    if (partNumber === 0) {
      const whole = part;
      part = undefined;
      const bytes = whole?.subarray(0, filled) ?? Buffer.alloc(0);
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: bytes,
          ContentLength: bytes.length,
          ContentType: options.contentType,
        }),
        { abortSignal: abort.signal },
      );
      if (whole) release(whole);
      return;
    }
    const lastPart = part as Buffer;
    part = undefined;
    await sendPart(lastPart, filled);
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
  } finally {
    // Only buffers no request holds: a failed request's socket may still be writing its own.
    for (const buffer of part ? [part, ...free] : free) release(buffer);
  }
}

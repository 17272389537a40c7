import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { uploadParts } from '../../../services/file/part-upload';
import { rejectionOf } from '../helpers';

const PART = 16;

interface Sent {
  command: string;
  body?: Buffer;
  /** The bytes as they were when sent: the buffer itself is reused afterwards. */
  bytes?: Buffer;
  partNumber?: number;
}

/** An S3 client that keeps what it is sent; `failPart` makes that UploadPart fail. */
function fakeS3(failPart?: number) {
  const sent: Sent[] = [];
  const client = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const body = command.input.Body as Buffer | undefined;
      const partNumber = command.input.PartNumber as number | undefined;
      sent.push({
        command: command.constructor.name,
        body,
        bytes: body && Buffer.from(body),
        partNumber,
      });
      await new Promise((resolve) => setImmediate(resolve));
      if (partNumber !== undefined && partNumber === failPart) throw new Error('S3 is down');
      return { UploadId: 'u1', ETag: `"${partNumber}"` };
    },
  } as unknown as S3Client;
  return { client, sent };
}

const options = (client: S3Client) => ({
  client,
  bucket: 'b',
  key: 'k',
  contentType: 'application/pdf',
  partSize: PART,
  queueSize: 2,
});

/** `size` bytes in chunks of 5, so that chunks straddle the parts. */
const bodyOf = (size: number) => {
  const bytes = Buffer.from(Array.from({ length: size }, (_, i) => i % 251));
  const chunks: Buffer[] = [];
  for (let i = 0; i < size; i += 5) chunks.push(bytes.subarray(i, i + 5));
  return { bytes, body: Readable.from(chunks) };
};

describe('uploadParts', () => {
  it.each([0, 1, PART, PART + 1, 3 * PART + 7])(
    'stores %i bytes as sent: one PutObject up to a part, else parts in order',
    async (size) => {
      const { client, sent } = fakeS3();
      const { bytes, body } = bodyOf(size);
      await uploadParts(body, options(client));
      const parts = sent.filter((s) => s.command === 'UploadPartCommand');
      const stored = Buffer.concat(
        size <= PART
          ? sent.filter((s) => s.command === 'PutObjectCommand').map((s) => s.bytes as Buffer)
          : parts
              .sort((a, b) => (a.partNumber ?? 0) - (b.partNumber ?? 0))
              .map((s) => s.bytes as Buffer),
      );
      expect(stored.equals(bytes)).toBe(true);
      expect(parts.every((p, i) => i === parts.length - 1 || p.bytes?.length === PART)).toBe(true);
    },
  );

  it('frees every part buffer when the upload ends: nothing is held after it', async () => {
    const { client, sent } = fakeS3();
    await uploadParts(bodyOf(5 * PART + 3).body, options(client));
    const bodies = sent.flatMap((s) => (s.body ? [s.body] : []));
    expect(bodies).toHaveLength(6);
    // Detached: the memory went back at once, not at V8's next full collection.
    for (const body of bodies) expect(body.buffer.byteLength).toBe(0);
  });

  it('leaves the buffer of a failed part alone (its socket may still write it), frees the rest', async () => {
    const { client, sent } = fakeS3(2);
    const err = await rejectionOf(() => uploadParts(bodyOf(5 * PART + 3).body, options(client)));
    expect(err).toMatchObject({ message: 'S3 is down' });
    const failed = sent.find((s) => s.partNumber === 2)?.body as Buffer;
    expect(failed.buffer.byteLength).toBeGreaterThan(0);
    expect(sent.some((s) => s.command === 'AbortMultipartUploadCommand')).toBe(true);
    const others = sent.filter(
      (s) => s.body && s.partNumber !== 2 && s.body.buffer !== failed.buffer,
    );
    for (const s of others) expect(s.body?.buffer.byteLength).toBe(0);
  });
});

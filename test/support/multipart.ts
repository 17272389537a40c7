import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';

/** One part of a multipart/form-data body: a file (with a filename) or a text field. */
export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  /** Bytes, or a generator for bodies too large to hold (the 100 MB test). */
  data: Buffer | string | (() => AsyncIterable<Buffer> | Iterable<Buffer>);
}

export function boundary(): string {
  return `----waybill-test-${randomBytes(12).toString('hex')}`;
}

export const multipartType = (b: string) => `multipart/form-data; boundary=${b}`;

function partHeader(part: Part, b: string): Buffer {
  let disposition = `form-data; name="${part.name}"`;
  if (part.filename !== undefined) disposition += `; filename="${part.filename}"`;
  const lines = [`--${b}`, `Content-Disposition: ${disposition}`];
  if (part.contentType) lines.push(`Content-Type: ${part.contentType}`);
  else if (part.filename !== undefined) lines.push('Content-Type: application/octet-stream');
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n`);
}

/** The body as chunks, generated lazily: nothing large is ever held. */
export interface BodyOptions {
  /** Close the body with its final boundary (default true). */
  end?: boolean;
  /** Yield to the event loop after each part, like a network would. */
  paced?: boolean;
}

export async function* multipartChunks(
  parts: Part[],
  b: string,
  { end = true, paced = false }: BodyOptions = {},
): AsyncGenerator<Buffer> {
  for (const part of parts) {
    yield partHeader(part, b);
    if (typeof part.data === 'function') {
      for await (const chunk of part.data()) yield chunk;
    } else {
      yield Buffer.from(part.data);
    }
    yield Buffer.from('\r\n');
    if (paced) await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (end) yield Buffer.from(`--${b}--\r\n`);
}

export function multipartStream(parts: Part[], b: string, options?: BodyOptions): Readable {
  return Readable.from(multipartChunks(parts, b, options), { objectMode: false });
}

export async function multipartBuffer(parts: Part[], b: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of multipartChunks(parts, b)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** `size` bytes starting with `head`, produced in 64 KB chunks of pseudo-random data. */
export function* generatedFile(head: Buffer, size: number, chunk = 64 * 1024): Generator<Buffer> {
  const block = randomBytes(chunk);
  let left = size;
  const first = Buffer.concat([head, block]).subarray(0, Math.min(chunk, size));
  yield first;
  left -= first.length;
  while (left > 0) {
    const n = Math.min(chunk, left);
    // Vary each block a little so that no layer can deduplicate it.
    block.writeUInt32BE(left >>> 0, 0);
    yield Buffer.from(block.subarray(0, n));
    left -= n;
  }
}

/** Minimal valid-looking heads of the accepted types. */
export const HEADS = {
  png: Buffer.from([
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
  ]),
  jpeg: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0]),
  gif: Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'),
  webp: Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 ')]),
  pdf: Buffer.from('%PDF-1.7\n%\xe2\xe3\xcf\xd3\n', 'latin1'),
};

/** A small file of a type: its head, then `size` random bytes. */
export const fileOf = (head: Buffer, size = 1000) => Buffer.concat([head, randomBytes(size)]);

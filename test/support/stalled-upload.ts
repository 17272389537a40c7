import { request as httpRequest, type ClientRequest } from 'node:http';
import type { Reply } from './http';
import { HEADS, boundary, generatedFile, multipartType } from './multipart';

/** An upload whose client sent part of its body and then went quiet. */
export interface StalledUpload {
  /** Settles once every byte given was handed to the socket. */
  sent: Promise<void>;
  /** The answer, if the server gives one before the body ends (a refusal, a timeout). */
  answer: Promise<Reply>;
  /** The client leaves: the connection is cut. */
  drop(): void;
}

function readReply(req: ClientRequest): Promise<Reply> {
  return new Promise((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.once('error', reject);
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString();
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined)
            headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers, text, body });
      });
    });
  });
}

/**
 * Starts a single upload of a PNG, sends its part header and the first `bytes` of the file
 * (chunked, no Content-Length), then sends nothing more until dropped; `null` bytes: nothing
 * after the request's headers, not even the part header.
 */
export function stalledUpload(base: string, key: string, bytes: number | null): StalledUpload {
  const url = new URL(`${base}/file/single-upload`);
  const b = boundary();
  const req = httpRequest({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: { 'api-key': key, 'content-type': multipartType(b) },
  });
  const answer = readReply(req);
  // A dropped upload rejects `answer` with ECONNRESET; only callers that wait for it care.
  answer.catch(() => undefined);
  const header =
    `--${b}\r\nContent-Disposition: form-data; name="upload-file"; filename="stalled.png"\r\n` +
    'Content-Type: image/png\r\n\r\n';
  const sent = (async () => {
    if (bytes === null) {
      req.flushHeaders();
      return;
    }
    const write = (chunk: Buffer | string) =>
      new Promise<void>((resolve, reject) =>
        req.write(chunk, (err) => (err ? reject(err) : resolve())),
      );
    await write(header);
    for (const chunk of generatedFile(HEADS.png, bytes)) await write(chunk);
  })();
  sent.catch(() => undefined);
  return { sent, answer, drop: () => req.destroy() };
}

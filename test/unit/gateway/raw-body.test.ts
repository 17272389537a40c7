import { rawBodyReader } from '../../../services/gateway/raw-body';
import { fakeRequest } from './fake-http';

/** Runs the reader over a body sent in chunks; what it passed to `next`, and the body it set. */
async function read(chunks: Buffer[], headers: Record<string, string> = {}, limit = 16) {
  const req = fakeRequest({ method: 'POST', url: '/webhooks/x', headers });
  const done = new Promise<unknown>((resolve) =>
    rawBodyReader(['x-signature'], limit)(req, {} as never, resolve),
  );
  const stream = req as unknown as NodeJS.WritableStream;
  for (const chunk of chunks) stream.write(chunk);
  stream.end();
  const err = await done;
  return { err, body: (req as unknown as { body?: unknown }).body };
}

describe('rawBodyReader', () => {
  it('hands on the exact bytes as base64 with the named headers', async () => {
    const bytes = [Buffer.from([0xff, 0x00, 0x7b]), Buffer.from('"a"}')];
    const { err, body } = await read(bytes, { 'x-signature': 'abc', 'x-other': 'no' });
    expect(err).toBeUndefined();
    expect(body).toEqual({
      rawBody: Buffer.concat(bytes).toString('base64'),
      headers: { 'x-signature': 'abc' },
    });
  });

  it('refuses a body over the limit with 413, by its length or as it arrives', async () => {
    const declared = await read([Buffer.alloc(4)], { 'content-length': '17' });
    expect(declared.err).toMatchObject({ type: 'PAYLOAD_TOO_LARGE', code: 413 });
    const streamed = await read([Buffer.alloc(10), Buffer.alloc(10)]);
    expect(streamed.err).toMatchObject({ type: 'PAYLOAD_TOO_LARGE' });
    expect(streamed.body).toBeUndefined();
  });
});

describe('rawBodyReader, the client gone mid-body', () => {
  it('passes on a 400 of the request, not an error of ours', async () => {
    const req = fakeRequest({ method: 'POST', url: '/webhooks/x' });
    const done = new Promise<unknown>((resolve) =>
      rawBodyReader([], 16)(req, {} as never, resolve),
    );
    (req as unknown as NodeJS.WritableStream).write(Buffer.from('{"a"'));
    req.emit('error', Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    expect(await done).toMatchObject({
      type: 'BAD_REQUEST',
      code: 400,
      message: 'The request was cut off before its body ended; send it whole',
    });
  });
});

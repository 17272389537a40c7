import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import { payloadTooLarge } from '../../../libs/errors';
import { TransferDesk, pullBody, pushBody, transferAgent } from '../../../libs/transfer';
import { rejectionOf } from '../helpers';

const agent = transferAgent();
const desk = new TransferDesk({ host: '127.0.0.1', port: 0, fallbackHost: '127.0.0.1' });
beforeAll(() => desk.listen());
afterAll(async () => {
  agent.destroy();
  await desk.close();
});

const settled = (stream: Readable) =>
  new Promise<void>((resolve) => {
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });

describe('TransferDesk', () => {
  it('announces where it listens: the bound address, or the fallback for any address', async () => {
    expect(
      desk.expectBody(
        async () => null,
        () => undefined,
      ).url,
    ).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/transfers\/[0-9a-f-]{36}$/);
    const any = new TransferDesk({ host: '0.0.0.0', port: 0, fallbackHost: '10.1.2.3' });
    const named = new TransferDesk({
      host: '0.0.0.0',
      port: 0,
      fallbackHost: '10.1.2.3',
      advertisedHost: 'file-0.internal',
    });
    await Promise.all([any.listen(), named.listen()]);
    try {
      expect(any.offer(Readable.from([])).url).toMatch(/^http:\/\/10\.1\.2\.3:\d+\//);
      expect(named.offer(Readable.from([])).url).toMatch(/^http:\/\/file-0\.internal:\d+\//);
    } finally {
      await Promise.all([any.close(), named.close()]);
    }
  });

  it('gives an unused ticket up after its life: the upload slot back, the download closed', async () => {
    const short = new TransferDesk({
      host: '127.0.0.1',
      port: 0,
      fallbackHost: '127.0.0.1',
      ticketMs: 20,
    });
    await short.listen();
    try {
      let expired = 0;
      const ticket = short.expectBody(
        async () => 'never',
        () => expired++,
      );
      const source = new PassThrough();
      short.offer(source);
      await settled(source);
      expect(source.destroyed).toBe(true);
      expect(expired).toBe(1);
      expect(short.size).toBe(0);
      const late = await rejectionOf(() =>
        pushBody(agent, ticket, Readable.from([Buffer.from('x')]), 1000),
      );
      expect(late).toMatchObject({ code: 503, message: /could not be reached/ });
    } finally {
      await short.close();
    }
  });
});

describe('a ticket handed back', () => {
  const handBack = (url: string, token: string) =>
    fetch(url, { method: 'DELETE', headers: { 'x-waybill-transfer-token': token } });

  it('is let go at once, with its token only, and cannot be used after', async () => {
    let expired = 0;
    const ticket = desk.expectBody(
      async () => 'never',
      () => expired++,
    );
    expect((await handBack(ticket.url, 'not-the-token')).status).toBe(404);
    expect(expired).toBe(0);
    expect((await handBack(ticket.url, ticket.token)).status).toBe(204);
    expect(expired).toBe(1);
    expect((await handBack(ticket.url, ticket.token)).status).toBe(404);
    const late = await rejectionOf(() =>
      pushBody(agent, ticket, Readable.from([Buffer.from('x')]), 1000),
    );
    expect(late).toMatchObject({ code: 503 });
    expect(expired).toBe(1);
  });

  it('closes an offered download', async () => {
    const source = new PassThrough();
    const closed = settled(source);
    const ticket = desk.offer(source);
    expect((await handBack(ticket.url, ticket.token)).status).toBe(204);
    await closed;
    expect(source.destroyed).toBe(true);
  });
});

describe('pushBody', () => {
  it('stops sending when the receiver answers before the end, and throws its error', async () => {
    const ticket = desk.expectBody(
      async (body) => {
        await new Promise((resolve) => body.once('data', resolve));
        throw payloadTooLarge('The file is larger than 1 MB');
      },
      () => undefined,
    );
    // A body that would never end: the answer must not wait for it.
    const body = new PassThrough();
    body.write(Buffer.alloc(64 * 1024));
    const err = await rejectionOf(() => pushBody(agent, ticket, body, 5000));
    expect(err).toMatchObject({
      code: 413,
      type: 'PAYLOAD_TOO_LARGE',
      message: 'The file is larger than 1 MB',
    });
  });

  it('cuts the transfer when the body is cut, so that the receiver stops at once', async () => {
    let seen: unknown;
    const received = new Promise<void>((resolve) => {
      const ticket = desk.expectBody(
        async (stream) => {
          try {
            for await (const chunk of stream) void chunk;
          } catch (err) {
            seen = err;
          }
          resolve();
        },
        () => undefined,
      );
      const body = new PassThrough();
      body.write('part of it');
      void pushBody(agent, ticket, body, 5000).catch(() => undefined);
      setTimeout(() => body.destroy(), 50);
    });
    await received;
    expect(seen).toBeDefined();
  });

  it.each([
    ['closes', (socket: Socket) => socket.destroy()],
    ['resets', (socket: Socket) => socket.resetAndDestroy()],
  ])(
    'fails with a 503 when the receiver %s the connection after its answer has begun',
    async (_how, cut) => {
      // A receiver that dies mid-answer: the headers and part of the JSON, then no more.
      const server = createServer((socket) => {
        socket.once('data', () => {
          socket.write(
            'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"ok"',
          );
          setImmediate(() => cut(socket));
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        const ticket = { url: `http://127.0.0.1:${port}/transfers/${randomUUID()}`, token: 'x' };
        // No time limit: before the fix nothing settled a closed push, and the test timed out.
        const err = await rejectionOf(() =>
          pushBody(agent, ticket, Readable.from([Buffer.from('body')]), 0),
        );
        expect(err).toMatchObject({ code: 503, message: /could not be reached/ });
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    },
  );

  it('cuts the transfer when the client leaves after its whole body, so that what was stored is handed to `unanswered`', async () => {
    let bodyRead = () => undefined as void;
    const read = new Promise<void>((resolve) => (bodyRead = resolve));
    let finish = (_: string) => undefined as void;
    let pusherGone: Promise<unknown> = Promise.resolve();
    let lost = (_: string) => undefined as void;
    const unanswered = new Promise<string>((resolve) => (lost = resolve));
    const ticket = desk.expectBody(
      async (body) => {
        pusherGone = once((body as IncomingMessage).socket, 'close');
        for await (const chunk of body) void chunk;
        bodyRead();
        // Still storing it when the client goes.
        return new Promise<string>((resolve) => (finish = resolve));
      },
      () => undefined,
      (data) => lost(data),
    );
    const client = Object.assign(new EventEmitter(), { destroyed: false });
    const pushed = rejectionOf(() =>
      // No time limit: only the client's leaving can end this push.
      pushBody(agent, ticket, Readable.from([Buffer.from('the whole body')]), 0, client),
    );
    await read;
    client.emit('close');
    expect(await pushed).toBeDefined();
    await pusherGone;
    finish('stored for nobody');
    expect(await unanswered).toBe('stored for nobody');
    expect(client.listenerCount('close')).toBe(0);
  }, 5_000);

  it('does not push for a client already gone when the ticket came, and hands the ticket back: the receiver lets go at once', async () => {
    let received = false;
    let expired = 0;
    const ticket = desk.expectBody(
      async (body) => {
        received = true;
        for await (const chunk of body) void chunk;
        return 'stored for nobody';
      },
      // The upload slot, given back now rather than at the ticket's end (10 s).
      () => expired++,
    );
    const gone = Object.assign(new EventEmitter(), { destroyed: true });
    // No time limit: only the client's having left can end this push.
    const err = await rejectionOf(() =>
      pushBody(agent, ticket, Readable.from([Buffer.from('the whole body')]), 0, gone),
    );
    expect(err).toBeDefined();
    expect(gone.listenerCount('close')).toBe(0);
    expect(received).toBe(false);
    expect(expired).toBe(1);
  }, 5_000);

  it('times out as a moleculer call does (504)', async () => {
    const ticket = desk.expectBody(
      () => new Promise(() => undefined),
      () => undefined,
    );
    const err = await rejectionOf(() => pushBody(agent, ticket, new PassThrough(), 100));
    expect(err).toMatchObject({ type: 'REQUEST_TIMEOUT' });
  });

  it('hands a result the pusher no longer waits for to `unanswered`, and only such a result', async () => {
    const unanswered: string[] = [];
    let lost = () => undefined as void;
    const handedOver = new Promise<void>((resolve) => (lost = resolve));
    let finish = (_: string) => undefined as void;
    let pusherGone: Promise<unknown> = Promise.resolve();
    const late = desk.expectBody(
      (body) => {
        body.resume();
        pusherGone = once((body as IncomingMessage).socket, 'close');
        return new Promise<string>((resolve) => (finish = resolve));
      },
      () => undefined,
      (data) => {
        unanswered.push(data);
        lost();
      },
    );
    const err = await rejectionOf(() =>
      pushBody(agent, late, Readable.from([Buffer.from('body')]), 100),
    );
    expect(err).toMatchObject({ type: 'REQUEST_TIMEOUT' });
    await pusherGone;
    finish('made for nobody');
    await handedOver;
    const answered = desk.expectBody(
      async (body) => {
        body.resume();
        return 'handed back';
      },
      () => undefined,
      (data) => unanswered.push(data),
    );
    await expect(
      pushBody(agent, answered, Readable.from([Buffer.from('body')]), 5_000),
    ).resolves.toBe('handed back');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(unanswered).toEqual(['made for nobody']);
  });
});

describe('pullBody', () => {
  it('streams what was offered', async () => {
    const res = await pullBody(agent, desk.offer(Readable.from([Buffer.from('abc')])), 1000);
    let text = '';
    for await (const chunk of res) text += String(chunk);
    expect(text).toBe('abc');
  });

  it('sends an offered length as Content-Length: the bytes come unframed, in whole reads', async () => {
    const chunks = [Buffer.from('ab'), Buffer.from('cd'), Buffer.from('e')];
    const res = await pullBody(agent, desk.offer(Readable.from(chunks), 5), 1000);
    expect(res.headers['content-length']).toBe('5');
    expect(res.headers['transfer-encoding']).toBeUndefined();
    let text = '';
    for await (const chunk of res) text += String(chunk);
    expect(text).toBe('abcde');
  });

  it('closes the source when the puller leaves', async () => {
    const source = new PassThrough();
    const res = await pullBody(agent, desk.offer(source), 1000);
    source.write('first');
    res.destroy();
    await settled(source);
    expect(source.destroyed).toBe(true);
  });
});

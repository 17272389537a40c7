import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { answerClientError } from '../../../services/gateway/client-errors';
import { cutStatus } from '../../../services/gateway/http';

/**
 * What Node refuses before a request reaches the gateway, answered in the error envelope by
 * `answerClientError` on a real HTTP server (its request timeout short, so that it is tried).
 */
let server: Server;
let port: number;
const closedRequests: string[] = [];
/** The status each closed response is recorded with (`cutStatus`), by its request's path. */
const recorded = new Map<string, number | undefined>();

beforeAll(async () => {
  server = createServer({ requestTimeout: 500, connectionsCheckingInterval: 100 }, (req, res) => {
    req.on('close', () => closedRequests.push(req.url ?? ''));
    res.on('close', () => recorded.set(req.url ?? '', cutStatus(res)));
    // A body is waited for, as the gateway's JSON routes do; anything else answered at once.
    if (req.headers['content-length']) return;
    res.end('ok');
  });
  server.on('clientError', answerClientError('staging'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A raw connection, and everything it has been sent, until it closes. */
function open(): { socket: Socket; received: () => string; closed: Promise<void> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, received: () => text, closed };
}

/** The JSON body of the last answer in `text`. */
const lastEnvelope = (text: string) => JSON.parse(text.slice(text.lastIndexOf('\r\n\r\n') + 4));

it('answers a request refused on a connection that answered others before', async () => {
  const { socket, received, closed } = open();
  socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\n');
  await new Promise<void>((resolve) => {
    const check = () => (received().endsWith('ok') ? resolve() : setTimeout(check, 10));
    check();
  });
  socket.write(`GET /second HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(20_000)}\r\n\r\n`);
  await closed;
  expect(received()).toMatch(/HTTP\/1\.1 431 Request Header Fields Too Large/);
  expect(lastEnvelope(received())).toMatchObject({ statusCode: 431 });
});

it('ends a request whose body never came: answered 408, the request closed', async () => {
  const { socket, received, closed } = open();
  // Headers promising a body, then nothing; the connection is kept open by the client.
  socket.write('POST /waiting HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n');
  await closed;
  expect(received()).toMatch(/^HTTP\/1\.1 408 Request Timeout/);
  expect(lastEnvelope(received())).toMatchObject({
    statusCode: 408,
    message: expect.stringMatching(/did not arrive in time/),
  });
  expect(closedRequests).toContain('/waiting');
  // Logged and counted as the 408 it was answered, not as a client that left (499).
  expect(recorded.get('/waiting')).toBe(408);
});

import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { TrackingState } from '../../../libs/contracts/order';
import {
  MAX_PAGES_PER_TRACKING_ID,
  RECONNECT_MS,
  TrackingStreams,
} from '../../../services/gateway/tracking-stream';
import type { GatewayRequest } from '../../../services/gateway/http';

/**
 * A tracking id's viewers share one feed per gateway process: however many pages follow a
 * delivery, a status change is one read of the order service, sent to each page.
 */
const TRACKING_ID = 'P2P-ABCDEFGHJKMN';

const state = (
  status: string,
  terminal = false,
  regions: Record<string, string> = {},
  version?: number,
) =>
  ({
    view: { trackingId: TRACKING_ID, status, terminal, live: false, version },
    regions,
  }) as unknown as TrackingState;

let current = state('PENDING');
let reads = 0;
/** How long the order service takes to answer. */
let readMs = 0;
/** The latest read of the order service, settled once it has answered. */
let lastRead: Promise<unknown> = Promise.resolve();

/**
 * Streams reading `current`, beating every `heartbeatMs`, each lasting `streamLifetimeMs`,
 * and the server they answer on, with the errors its answers raised.
 */
function streamsServing(
  heartbeatMs: number,
  streamLifetimeMs = 3_600_000,
  caps = { maxStreams: 50, maxStreamsPerAddress: 20 },
) {
  const streams = new TrackingStreams({
    config: {
      trustProxyHops: 0,
      tracking: { refreshMs: 3_600_000, heartbeatMs, ...caps, streamLifetimeMs },
    },
    fetch: (): Promise<TrackingState> => {
      reads += 1;
      const read = (async () => {
        if (readMs > 0) await new Promise((r) => setTimeout(r, readMs));
        return current;
      })();
      lastRead = read;
      return read;
    },
    logger: () => ({ warn: () => undefined }),
  });
  const handle = streams.handler();
  const errors: Error[] = [];
  const server = createServer((req, res) => {
    // Without it, an answer's error (a write after its end) would be thrown from the process.
    res.on('error', (err) => errors.push(err));
    (req as GatewayRequest).$params = { trackingId: TRACKING_ID };
    handle(req as GatewayRequest, res, (err) => {
      // As the gateway answers a refusal: its status, its Retry-After, its message.
      const refusal = err as { code?: number; data?: { retryAfter?: number } };
      res.statusCode = refusal.code ?? 500;
      if (refusal.data?.retryAfter) res.setHeader('retry-after', refusal.data.retryAfter);
      res.end(JSON.stringify({ message: (err as Error).message }));
    });
  });
  const listening = new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = () =>
    `http://127.0.0.1:${(server.address() as AddressInfo).port}/track/${TRACKING_ID}/events`;
  const stop = async () => {
    streams.closeAll();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { streams, listening, url, stop, errors, server };
}

const served = streamsServing(3_600_000);
const { streams } = served;
beforeAll(() => served.listening);
afterAll(() => served.stop());

/** A page following the stream: every `state` event's status, as it comes. */
const streamUrl = () => served.url();

async function follow(url = streamUrl()) {
  const res = await fetch(url);
  const statuses: string[] = [];
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  const page = {
    status: res.status,
    statuses,
    text: '',
    ended: false,
    close: () => reader.cancel(),
  };
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) {
        page.ended = true;
        return;
      }
      const text = decoder.decode(value, { stream: true });
      page.text += text;
      buffered += text;
      let at: number;
      while ((at = buffered.indexOf('\n\n')) >= 0) {
        const event = buffered.slice(0, at);
        buffered = buffered.slice(at + 2);
        const data = /^event: state\ndata: (.*)$/m.exec(event)?.[1];
        if (data) statuses.push((JSON.parse(data) as TrackingState).view.status);
      }
    }
  })();
  return page;
}

/** The latest read answered, and what the feed does with its answer done. */
async function settled(): Promise<void> {
  await lastRead;
  await new Promise((r) => setTimeout(r, 20));
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error(`still false: reads ${reads}`);
}

it('reads the state once per change for every page following it', async () => {
  const pages = [await follow()];
  await until(() => pages[0].statuses.length === 1 && reads === 2);
  // Opening the feed reads twice (the state, then once more for a change it may have missed).
  for (let i = 0; i < 4; i++) pages.push(await follow());
  await until(() => pages.every((p) => p.statuses.length === 1));
  expect(reads).toBe(2);

  current = state('COURIER_ASSIGNED');
  streams.statusChanged(TRACKING_ID);
  await until(() => pages.every((p) => p.statuses.length === 2));
  expect(reads).toBe(3);
  expect(pages.map((p) => p.statuses)).toEqual(pages.map(() => ['PENDING', 'COURIER_ASSIGNED']));

  // A change that changes nothing is read, and sent to no page.
  streams.statusChanged(TRACKING_ID);
  await until(() => reads === 4);
  expect(pages.every((p) => p.statuses.length === 2)).toBe(true);
  expect(streams.open).toBe(5);
  for (const page of pages) await page.close();
});

it('follows nothing for a page that left while its feed read the first state', async () => {
  await until(() => streams.open === 0);
  readMs = 200;
  const leaving = new AbortController();
  const request = fetch(streamUrl(), { signal: leaving.signal }).catch(() => undefined);
  await until(() => reads === 5);
  leaving.abort();
  await request;
  await new Promise((r) => setTimeout(r, 400));
  readMs = 0;
  const before = reads;
  // A feed left behind would read again on a status change, for nobody.
  streams.statusChanged(TRACKING_ID);
  await new Promise((r) => setTimeout(r, 100));
  expect(reads).toBe(before);
  expect(streams.open).toBe(0);
});

it('reads again at each heartbeat while no courier is under way: a missed status change shows', async () => {
  const beating = streamsServing(50);
  await beating.listening;
  try {
    current = state('PENDING');
    const page = await follow(beating.url());
    await until(() => page.statuses.length === 1);
    // The change's event never reaches this process: no statusChanged.
    current = state('COURIER_ASSIGNED');
    await until(() => page.statuses.includes('COURIER_ASSIGNED'));
    current = state('CANCELLED', true);
    await until(() => page.statuses.includes('CANCELLED') && beating.streams.open === 0);
    expect(page.statuses).toEqual(['PENDING', 'COURIER_ASSIGNED', 'CANCELLED']);
  } finally {
    await beating.stop();
  }
});

/** Each with this much markup: a page that stops reading soon has more than the kernel takes. */
const paddedState = (i: number) => state(`STEP_${i}`, false, { pad: 'x'.repeat(256 * 1024) });

it('drops a page that stops reading, instead of keeping what it does not take', async () => {
  const serving = streamsServing(3_600_000);
  await serving.listening;
  try {
    current = state('PENDING');
    const { port } = serving.server.address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    socket.write(`GET /track/${TRACKING_ID}/events HTTP/1.1\r\nHost: localhost\r\n\r\n`);
    await until(() => received.includes('event: state') && serving.streams.open === 1);
    // Reads nothing more: the kernel's buffers fill, then Node's.
    socket.pause();
    for (let i = 0; i < 200 && serving.streams.open > 0; i++) {
      const before = reads;
      current = paddedState(i);
      serving.streams.statusChanged(TRACKING_ID);
      await until(() => reads > before);
      await lastRead;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => serving.streams.open === 0);
    // Its connection let go of, with what it held: the client, still not reading, never knows.
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        serving.server.getConnections((err, count) => (err ? reject(err) : resolve(count))),
      );
    expect(await connections()).toBe(0);
    expect(serving.errors).toEqual([]);
    socket.destroy();
  } finally {
    await serving.stop();
  }
});

it('ends a stream at its lifetime, telling the page how soon to reconnect', async () => {
  const serving = streamsServing(3_600_000, 200);
  await serving.listening;
  try {
    current = state('PENDING');
    const page = await follow(serving.url());
    expect(page.status).toBe(200);
    await until(() => page.ended);
    expect(page.statuses).toEqual(['PENDING']);
    // Ended without `end`: the page's EventSource reconnects, after RECONNECT_MS.
    expect(page.text).toMatch(new RegExp(`^retry: ${RECONNECT_MS}\n`));
    expect(page.text).not.toContain('event: end');
    await until(() => serving.streams.open === 0);
  } finally {
    await serving.stop();
  }
});

it('ends every stream as the process stops, and sends nothing to them after', async () => {
  const serving = streamsServing(3_600_000);
  await serving.listening;
  try {
    current = state('PENDING');
    const page = await follow(serving.url());
    await until(() => page.statuses.length === 1);
    await lastRead;
    // A status change whose read is under way as the process stops: it answers after.
    current = state('COURIER_ASSIGNED');
    serving.streams.statusChanged(TRACKING_ID);
    const closing = serving.streams.closeAll();
    await lastRead;
    await closing;
    await until(() => page.ended);
    // Nothing written to the ended answers (a write after the end throws without a listener).
    expect(serving.errors).toEqual([]);
    expect(page.statuses).toEqual(['PENDING']);
    expect(serving.streams.open).toBe(0);
  } finally {
    await serving.stop();
  }
});

it('sends a page that asks once the process is stopping elsewhere, holding no stream', async () => {
  const serving = streamsServing(3_600_000);
  await serving.listening;
  try {
    current = state('PENDING');
    await serving.streams.closeAll();
    const late = await follow(serving.url());
    expect(late.status).toBe(200);
    await until(() => late.ended);
    // No state: its EventSource reconnects after RECONNECT_MS, to a process not stopping.
    expect(late.text).toBe(`retry: ${RECONNECT_MS}\n\n`);
    expect(serving.streams.open).toBe(0);
  } finally {
    await serving.stop();
  }
});

it(`holds ${MAX_PAGES_PER_TRACKING_ID} live pages of one tracking id at most, from any addresses`, async () => {
  const wide = streamsServing(3_600_000, 3_600_000, { maxStreams: 100, maxStreamsPerAddress: 100 });
  await wide.listening;
  try {
    const pages = await Promise.all(
      Array.from({ length: MAX_PAGES_PER_TRACKING_ID }, () => follow(wide.url())),
    );
    expect(pages.map((p) => p.status)).toEqual(Array(MAX_PAGES_PER_TRACKING_ID).fill(200));
    const over = await fetch(wide.url());
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBe('30');
    expect(((await over.json()) as { message: string }).message).toBe(
      `Too many live pages of this delivery's tracking open (${MAX_PAGES_PER_TRACKING_ID}); close some of them, or reload later`,
    );
    // A page that leaves frees its place.
    await pages[0].close();
    await until(() => wide.streams.open < MAX_PAGES_PER_TRACKING_ID);
    expect((await follow(wide.url())).status).toBe(200);
  } finally {
    await wide.stop();
  }
});

it('never sends, nor keeps, a state older than the one it read before', async () => {
  const fresh = streamsServing(3_600_000);
  await fresh.listening;
  try {
    current = state('ARRIVED_AT_DROPOFF', false, {}, 7);
    const opening = reads;
    const page = await follow(fresh.url());
    // Opening the feed reads twice: the state, and once more.
    await until(() => page.statuses.length === 1 && reads === opening + 2);
    await settled();
    // An order node that read before another's later write answers the next read.
    current = state('COURIER_ASSIGNED', false, {}, 5);
    fresh.streams.statusChanged(TRACKING_ID);
    await until(() => reads === opening + 3);
    await settled();
    current = state('DELIVERED', false, {}, 8);
    fresh.streams.statusChanged(TRACKING_ID);
    await until(() => page.statuses.length === 2);
    expect(page.statuses).toEqual(['ARRIVED_AT_DROPOFF', 'DELIVERED']);
    await page.close();
  } finally {
    current = state('PENDING');
    await fresh.stop();
  }
});

import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { ServiceBroker } from 'moleculer';
import type { TrackingState } from '../../libs/contracts/order';
import { eventually } from '../support/eventually';
import { adminHeaders } from '../support/http';
import { count, samples } from '../support/metrics';
import { isolation, startClient, startNode, type NodeProcess } from '../support/stack';

/**
 * Requests their client gave up on before the answer was sent are logged and counted once,
 * as 499: a slow one (an admin call whose service has not answered yet) and a tracking page's
 * stream the page closed. The backends are the test's own, answering when the test says so.
 */
const TRACKING_ID = 'P2P-ABCDEFGHJKMN';

const waiting: TrackingState = {
  view: { trackingId: TRACKING_ID, status: 'PENDING', terminal: false, live: false },
  regions: {},
} as unknown as TrackingState;

/** A request sent, its answer's head once it comes. */
function send(url: string, headers: Record<string, string> = {}) {
  let answered: (res: IncomingMessage) => void = () => undefined;
  const head = new Promise<IncomingMessage>((resolve) => (answered = resolve));
  const req: ClientRequest = httpRequest(url, { headers }, answered);
  // The test destroys it: the error that follows is what it asked for.
  req.on('error', () => undefined);
  req.end();
  return { req, head };
}

interface HttpLine {
  msg: string;
  method: string;
  path: string;
  status: number;
}

describe('requests the client abandons', () => {
  const iso = isolation();
  let gateway: NodeProcess;
  let backends: ServiceBroker;
  /** The admin calls that reached the test's account service, each released by the test. */
  const held: (() => void)[] = [];

  beforeAll(async () => {
    gateway = await startNode({ services: 'gateway', iso, env: { LOG_LEVEL: 'info' } });
    backends = await startClient(
      iso,
      [],
      [
        { name: 'order', actions: { trackingState: { handler: () => waiting } } },
        {
          name: 'account',
          actions: {
            findUsers: {
              handler: () => new Promise<unknown[]>((resolve) => held.push(() => resolve([]))),
            },
          },
        },
      ],
    );
  });

  afterAll(async () => {
    for (const release of held) release();
    await gateway?.stop();
    await backends?.stop();
  });

  const httpLines = (path: string) =>
    gateway
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as HttpLine)
      .filter((line) => line.msg === 'http' && line.path === path);

  const answers = async (route: string) =>
    (await samples(gateway.opsUrl, 'waybill_http_requests_total')).filter(
      (s) => s.labels.route === route,
    );

  it('counts and logs a slow request given up on once, as 499', async () => {
    const { req } = send(`${gateway.url}/admin/users`, adminHeaders);
    await eventually(() => expect(held).toHaveLength(1), { timeout: 10_000 });
    req.destroy();

    await eventually(async () => {
      expect(count(await answers('/admin/users'), { status: '499' })).toBe(1);
    });
    // The service answers after all, to nobody; then a request that waits for its answer.
    held[0]();
    const second = send(`${gateway.url}/admin/users`, adminHeaders);
    await eventually(() => expect(held).toHaveLength(2), { timeout: 10_000 });
    held[1]();
    expect((await second.head).statusCode).toBe(200);

    await eventually(async () => {
      expect(count(await answers('/admin/users'), { status: '200' })).toBe(1);
    });
    expect(count(await answers('/admin/users'))).toBe(2);
    const duration = await samples(gateway.opsUrl, 'waybill_http_request_duration_seconds_count');
    expect(count(duration, { route: '/admin/users' })).toBe(2);
    expect(httpLines('/admin/users').map((line) => line.status)).toEqual([499, 200]);
  });

  it('counts and logs a tracking stream the page closed once, as 499', async () => {
    const path = `/track/${TRACKING_ID}/events`;
    const { req, head } = send(`${gateway.url}${path}`);
    const res = await head;
    expect(res.statusCode).toBe(200);
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => (text += chunk));
    res.on('error', () => undefined);
    await eventually(() => expect(text).toContain('event: state'));
    req.destroy();

    const route = '/track/:trackingId/events';
    await eventually(async () => expect(count(await answers(route), { status: '499' })).toBe(1));
    expect(count(await answers(route))).toBe(1);
    // Logged by its page, not its tracking id (which opens the page to whoever reads it).
    await eventually(() => expect(httpLines(route).map((line) => line.status)).toEqual([499]));
    expect(httpLines(path)).toEqual([]);
    // Ended by the gateway as it stops, a stream is an answer sent (200): not this one again.
    await gateway.stop();
    expect(httpLines(route)).toHaveLength(1);
  });
});

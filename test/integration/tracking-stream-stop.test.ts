import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { ServiceBroker } from 'moleculer';
import type { TrackingState } from '../../libs/contracts/order';
import { eventually } from '../support/eventually';
import { isolation, startClient, startNode, type NodeProcess } from '../support/stack';

/**
 * A gateway stopped (SIGTERM) while a tracking page follows a delivery: the stream is ended
 * as the stop begins, so that the page reconnects elsewhere and the stop, which waits for the
 * requests in progress, is not held by it. The order service is the test's own, answering one
 * delivery that is not over.
 */
const TRACKING_ID = 'P2P-ABCDEFGHJKMN';

const waiting: TrackingState = {
  view: { trackingId: TRACKING_ID, status: 'PENDING', terminal: false, live: false },
  regions: {},
} as unknown as TrackingState;

/** A stream: its answer, what came so far, and whether the gateway ended it. */
function openStream(url: string) {
  return new Promise<{ res: IncomingMessage; text: () => string; ended: Promise<boolean> }>(
    (resolve, reject) => {
      const req = httpRequest(url, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        // Ended in full (true), or cut (false).
        const ended = new Promise<boolean>((settle) => {
          res.once('end', () => settle(true));
          res.once('error', () => settle(false));
          res.once('aborted', () => settle(false));
        });
        resolve({ res, text: () => body, ended });
      });
      req.on('error', reject);
      req.end();
    },
  );
}

describe('a gateway stopped with a tracking page open', () => {
  const iso = isolation();
  let gateway: NodeProcess;
  let order: ServiceBroker;

  beforeAll(async () => {
    gateway = await startNode({
      services: 'gateway',
      iso,
      // Short, so that a stop held by the stream fails the test soon (the config wants it
      // longer than a call may last).
      env: { STOP_GRACE_MS: '4000', REQUEST_TIMEOUT_MS: '3000' },
    });
    order = await startClient(
      iso,
      [],
      [{ name: 'order', actions: { trackingState: { handler: () => waiting } } }],
    );
  });

  afterAll(async () => {
    await gateway?.stop('SIGKILL');
    await order?.stop();
  });

  it('ends the stream and exits 0', async () => {
    const stream = await openStream(`${gateway.url}/track/${TRACKING_ID}/events`);
    expect(stream.res.statusCode).toBe(200);
    await eventually(() => expect(stream.text()).toContain('event: state'));

    const exit = new Promise<number | string | null>((resolve) =>
      gateway.child.once('exit', (code, signal) => resolve(code ?? signal)),
    );
    gateway.child.kill('SIGTERM');
    // Ended cleanly (a page's EventSource then reconnects), not cut with the process.
    expect(await stream.ended).toBe(true);
    expect(await exit).toBe(0);
    expect(gateway.output()).not.toMatch(/running context|GracefulStop|not stopped within/);
  });
});

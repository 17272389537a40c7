import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../libs/config';
import { eventually } from '../support/eventually';
import { ENVELOPE_KEYS, createUserWithKey } from '../support/http';
import { startPrivateInfra, type PrivateInfra, type ServerName } from '../support/infra';
import { failures, send, startLoad, type LoadTarget, type Sample } from '../support/load';
import { QUOTE, waitForQuote } from '../support/quote';
import { isolation, startNode, type NodeProcess } from '../support/stack';

const REQUEST_TIMEOUT_MS = 3_000;
/** How long an operation waits for the database: shorter than its outage below. */
const MONGO_TIMEOUT_MS = 1_000;

/**
 * NATS, Redis and the database restarted under load (issue 10, item 11), each in turn, on
 * servers of this test's own: every answer comes within the request timeout, none is a 500,
 * each failure is an error envelope, the platform recovers without restarting a service, and
 * SIGTERM then stops every process at once, no request left behind. Heavy: run it alone.
 */
describe('infrastructure restarted under load', () => {
  const iso = isolation();
  let infra: PrivateInfra;
  const nodes: NodeProcess[] = [];
  let targets: LoadTarget[];

  beforeAll(async () => {
    infra = await startPrivateInfra();
    const env = {
      ...infra.env,
      QUOTA_LIMIT: '100000000',
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      MONGO_TIMEOUT_MS: String(MONGO_TIMEOUT_MS),
    };
    nodes.push(await startNode({ services: 'account,geo,pricing,package', iso, env }));
    nodes.push(await startNode({ services: 'gateway', iso, env }));
    const gateway = nodes[1].url;
    const { key } = await createUserWithKey(gateway);
    await waitForQuote(gateway, key);
    const headers = { 'api-key': key };
    targets = [
      // Over NATS, no database.
      { url: `${gateway}/api/pricing`, headers, body: JSON.stringify(QUOTE) },
      // Over NATS, a database read.
      { url: `${gateway}/api/packages`, headers },
    ];
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await infra?.remove();
  });

  /** Every target answers 200 again. */
  const recovered = () =>
    eventually(
      async () => {
        for (const target of targets) {
          expect((await send(target, REQUEST_TIMEOUT_MS + 4_000)).status).toBe(200);
        }
      },
      { timeout: 30_000, interval: 250 },
    );

  /** Load while `name` is stopped for `downMs` and started again, until all recovered. */
  async function restartUnderLoad(name: ServerName, downMs = 1_500): Promise<Sample[]> {
    const loads = targets.map((target) =>
      startLoad(target, { connections: 3, giveUpMs: REQUEST_TIMEOUT_MS + 4_000 }),
    );
    try {
      await sleep(1_000);
      await infra.down(name);
      await sleep(downMs);
      await infra.up(name);
      await recovered();
      await sleep(500);
    } finally {
      // Stopped whatever happened, so that no request loop outlives the test.
      await Promise.all(loads.map((l) => l.stop()));
    }
    return loads.flatMap((l) => l.samples);
  }

  /** No hang, no 500, and each failure an envelope of its status. */
  function expectOnlyHonestFailures(samples: Sample[], allowed: number[]) {
    expect(samples.filter((s) => s.status === 200).length).toBeGreaterThan(0);
    const failed = failures(samples);
    expect(failed.filter((s) => !allowed.includes(s.status))).toEqual([]);
    for (const s of failed) {
      const body = JSON.parse(s.text ?? '{}') as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(ENVELOPE_KEYS);
      expect(body.statusCode).toBe(s.status);
    }
  }

  it('NATS: calls in flight and new ones fail at once with 503, then all recovers', async () => {
    expectOnlyHonestFailures(await restartUnderLoad('nats'), [503]);
  });

  it('Redis: every request answers 503 at once, then all recovers', async () => {
    expectOnlyHonestFailures(await restartUnderLoad('redis'), [503]);
  });

  it('the database: reads fail with 503 once it is overdue, then all recovers', async () => {
    const samples = await restartUnderLoad('mongo', MONGO_TIMEOUT_MS + 1_500);
    expect(failures(samples).length).toBeGreaterThan(0);
    expectOnlyHonestFailures(samples, [503]);
  });

  it('then SIGTERM stops every process within the grace period, nothing left running', async () => {
    // The processes' own (STOP_GRACE_MS), read from the environment they inherit.
    const { stopGraceMs } = loadConfig(process.env);
    const exits = await Promise.all(
      nodes.map(async (node) => {
        const exit = new Promise<number | string | null>((resolve) => {
          if (node.child.exitCode !== null) resolve(node.child.exitCode);
          node.child.once('exit', (code, signal) => resolve(code ?? signal));
        });
        node.child.kill('SIGTERM');
        const giveUp = sleep(stopGraceMs + 5_000, 'still running', { ref: false });
        return Promise.race([exit, giveUp]);
      }),
    );
    expect(exits).toEqual([0, 0]);
    for (const node of nodes) expect(node.output()).not.toMatch(/running context|GracefulStop/);
  });
});

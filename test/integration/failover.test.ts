import { setTimeout as sleep } from 'node:timers/promises';
import { createUserWithKey } from '../support/http';
import { failures, startLoad } from '../support/load';
import { QUOTE, waitForQuote } from '../support/quote';
import { count, samples as metric } from '../support/metrics';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * A crashed replica is invisible to integrators (issue 10, item 10): one of two pricing
 * replicas is killed with SIGKILL, so it never says goodbye, while quotes keep coming. The
 * calls it held and those sent to it before it is noticed are repeated on the other.
 * Heavy: three processes under load; run it alone.
 */
describe('a pricing replica killed under load', () => {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  // The default request timeout: a lost call must be noticed and repeated well within it.
  const env = { QUOTA_LIMIT: '100000000' };

  beforeAll(async () => {
    nodes.push(await startNode({ services: 'gateway,account,geo', iso, env }));
    for (let i = 0; i < 2; i++) nodes.push(await startNode({ services: 'pricing', iso, env }));
  });

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop('SIGKILL')));
    await dropDatabases(iso);
  });

  it('loses no quote', async () => {
    const [gateway, survivor, victim] = nodes;
    const { key } = await createUserWithKey(gateway.url);
    await waitForQuote(gateway.url, key);
    const load = startLoad(
      {
        url: `${gateway.url}/api/pricing`,
        headers: { 'api-key': key },
        body: JSON.stringify(QUOTE),
      },
      { connections: 8, giveUpMs: 30_000 },
    );
    await sleep(1_500);
    // Both replicas take quotes, so the one killed holds some when it dies.
    for (const replica of [victim, survivor]) {
      const handled = await metric(replica.opsUrl, 'moleculer_request_total');
      expect(count(handled, { action: 'pricing.price' })).toBeGreaterThan(0);
    }
    await victim.stop('SIGKILL');
    const killedAt = load.elapsed();
    // Long enough for the loss to be noticed (3-7 s) and quotes to flow again after it.
    await sleep(9_000);
    const samples = await load.stop();

    expect(failures(samples)).toEqual([]);
    expect(samples.filter((s) => s.at < killedAt && s.at + s.ms > killedAt).length).toBeGreaterThan(
      0,
    );
    expect(samples.filter((s) => s.at > killedAt + 8_000).length).toBeGreaterThan(0);
  });
});

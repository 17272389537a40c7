/**
 * Pricing benchmark: Mode B quotes through the gateway, with gateway, account, geo and
 * pricing each in its own process over NATS (the production shape), next to a bare Node
 * `http` server answering a fixed JSON body, measured the same way in the same run.
 *
 *   scripts/infra up && eval "$(scripts/infra env)"
 *   npm run bench:pricing                          (or: scripts/tsx scripts/bench-pricing.ts)
 *   npm run bench:pricing -- --connections 50 --duration 15
 *
 * The load generator (autocannon) runs in this process; the servers run in their own. Every
 * database the benchmark creates is dropped at the end. Any error or non-2xx answer during a
 * run is reported and makes the script exit non-zero.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import autocannon from 'autocannon';
import { createUserWithKey } from '../test/support/http';
import { QUOTE as QUOTE_BODY, waitForQuote } from '../test/support/quote';
import { dropDatabases, isolation, startNodes, type NodeProcess } from '../test/support/stack';
import { option, requireInfrastructure } from './bench-support';

const CONNECTIONS = option('connections', 50);
const DURATION_S = option('duration', 15);
const WARM_UP_S = option('warmup', 3);

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL']);

const QUOTE = JSON.stringify(QUOTE_BODY);

/** A bare `node:http` server in a child process; resolves with its URL. */
function startBareServer(): Promise<{ url: string; child: ChildProcess }> {
  const program = `
    const body = JSON.stringify({ success: true, message: 'ok', data: { total: '2756.25' } });
    const server = require('node:http').createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', program], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
    child.stdout?.once('data', (port: Buffer) =>
      resolve({ url: `http://127.0.0.1:${port.toString().trim()}`, child }),
    );
  });
}

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  failures: number;
}

const ROUTE = JSON.stringify({ origin: QUOTE_BODY.origin, destination: QUOTE_BODY.destination });

async function load(target: Target, seconds: number) {
  return autocannon({
    url: target.url,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...target.headers },
    body: target.body,
    connections: CONNECTIONS,
    duration: seconds,
  });
}

interface Target {
  url: string;
  body: string;
  headers?: Record<string, string>;
}

async function measure(target: Target): Promise<Measured> {
  await load(target, WARM_UP_S);
  const result = await load(target, DURATION_S);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    failures: result.errors + result.timeouts + result.non2xx,
  };
}

const row = (name: string, m: Measured) =>
  `${name.padEnd(26)} ${m.rps.toFixed(0).padStart(8)} ${m.p50.toFixed(1).padStart(8)} ${m.p99
    .toFixed(1)
    .padStart(8)} ${String(m.failures).padStart(8)}`;

async function main() {
  const iso = isolation();
  const nodes: NodeProcess[] = [];
  const bare = await startBareServer();
  try {
    const env = { QUOTA_LIMIT: '100000000', LOG_LEVEL: 'warn' };
    await startNodes(nodes, ['gateway', 'account', 'geo', 'pricing'], { iso, env });
    const gateway = nodes[0];
    const { key } = await createUserWithKey(gateway.url);
    const total = await waitForQuote(gateway.url, key);

    console.log(
      `bench:pricing — ${availableParallelism()} CPUs, Node ${process.version}, ${CONNECTIONS} connections, ${WARM_UP_S} s warm-up + ${DURATION_S} s each`,
    );
    console.log(`quote: Ikeja → Lekki, 3 kg, ₦20,000 declared → total ${total}`);
    const headers = { 'api-key': key };
    const baseline = await measure({ url: bare.url, body: QUOTE });
    const pricing = await measure({ url: `${gateway.url}/api/pricing`, body: QUOTE, headers });
    // One hop less (gateway → geo): what pricing itself adds to the platform's floor.
    const route = await measure({ url: `${gateway.url}/api/route`, body: ROUTE, headers });

    console.log(
      `\n${'target'.padEnd(26)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(8)}`,
    );
    console.log(row('bare node:http, fixed JSON', baseline));
    console.log(row('pricing via gateway, NATS', pricing));
    console.log(row('route via gateway (1 hop)', route));
    const rpsRatio = pricing.rps / baseline.rps;
    const p99Ratio = pricing.p99 / baseline.p99;
    console.log(
      `\nbench:pricing rps=${pricing.rps.toFixed(0)} p50=${pricing.p50} p99=${pricing.p99} | bare rps=${baseline.rps.toFixed(0)} p50=${baseline.p50} p99=${baseline.p99} | ratio rps=${rpsRatio.toFixed(3)} p99=${p99Ratio.toFixed(1)}`,
    );
    if (pricing.failures > 0 || baseline.failures > 0 || route.failures > 0) {
      console.error(
        `\nFAILED: ${pricing.failures} pricing, ${route.failures} route and ${baseline.failures} baseline requests did not answer 2xx`,
      );
      process.exitCode = 1;
    }
  } finally {
    bare.child.kill();
    await Promise.all(nodes.map((n) => n.stop()));
    await dropDatabases(iso);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

/**
 * One schemathesis run against the platform; scripts/schemathesis prepares Node, the venv and
 * the local infrastructure, then calls it:
 *
 *   node --import tsx scripts/schemathesis-run.ts <venv>/bin/schemathesis [run arguments...]
 *
 * Starts the platform in one process on a namespace and databases of its own
 * (test/support/stack), seeds it through the admin API (a user with a staging API key and a
 * funded wallet, one uploaded image and a package that shows it, a courier pricing rule, a
 * courier on the user's list with a courier token, and deliveries of the user's, so that lists
 * answer more than `[]`, the courier app's routes are reached and the delivery routes answer
 * real deliveries: their ids go to the hooks in WAYBILL_ST_DELIVERY_IDS; the hooks also put
 * free packages (WAYBILL_ST_PACKAGE_IDS) and the courier (WAYBILL_ST_COURIER_IDS) in generated
 * bodies), then runs
 * schemathesis with every check, the seed WAYBILL_ST_SEED (1) and the budget of
 * tools/schemathesis/schemathesis.toml (WAYBILL_ST_MAX_EXAMPLES overrides its examples per
 * operation), in two runs: the generated requests (in two processes at once, each on half of
 * the operations), then stateful scenarios for WAYBILL_ST_STATEFUL_SECONDS (75). Extra
 * arguments make one run of `schemathesis run` instead. Reports and the platform's log are
 * kept in .local/schemathesis/. Whatever happens, the platform is stopped and its databases
 * dropped.
 * Exits with schemathesis's status (130 on SIGINT, 143 on SIGTERM).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { relayWithoutPytestRulers } from './lib/report-lines';
import { operationNames, sharePatterns, type OpenApiPaths } from './lib/schemathesis-parts';
import { adminHeaders, createUserWithKey, request, type Reply } from '../test/support/http';
import { boundary, multipartBuffer, multipartType } from '../test/support/multipart';
import { credit, requestDelivery, savePackage } from '../test/support/deliveries';
import {
  ADMIN_TOKEN,
  dropDatabases,
  isolation,
  startNode,
  type NodeProcess,
} from '../test/support/stack';

const ROOT = join(__dirname, '..');
const CONFIG = join(ROOT, 'tools', 'schemathesis', 'schemathesis.toml');
const OUT = join(process.env.WAYBILL_LOCAL || join(ROOT, '.local'), 'schemathesis');
const SEED = process.env.WAYBILL_ST_SEED || '1';
/** Unset: the configuration's number of examples per operation (not the stateful phase's). */
const MAX_EXAMPLES = process.env.WAYBILL_ST_MAX_EXAMPLES || '';
/** How long the stateful scenarios run. */
const STATEFUL_SECONDS = process.env.WAYBILL_ST_STATEFUL_SECONDS || '75';
/** Processes the generated requests are shared among: the cores of the machines CI runs on. */
const GENERATING_PARTS = 2;

const TINY_PNG = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
    '1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2a1e8' +
    '6b0000000049454e44ae426082',
  'hex',
);

const log = (message: string) => console.error(`[waybill] ${message}`);

/** The exit statuses of scripts/test and scripts/schemathesis when interrupted. */
const SIGNALS = { SIGINT: 130, SIGTERM: 143 } as const;
type Interruption = keyof typeof SIGNALS;
let interrupted: Interruption | undefined;
/** The schemathesis processes running now. */
const running = new Set<ChildProcess>();

// The first signal stops schemathesis and lets the run clean up; a second one exits at once.
for (const signal of Object.keys(SIGNALS) as Interruption[]) {
  process.on(signal, () => {
    if (interrupted) process.exit(SIGNALS[signal]);
    interrupted = signal;
    for (const child of running) child.kill(signal);
  });
}

interface Pass {
  name: string;
  args: string[];
  /**
   * Processes that share the operations between them, at once. One schemathesis process keeps
   * one core busy generating while the platform answers with a tenth of the other (measured):
   * two take the generated requests' minutes down by about half. Each reports on its own.
   */
  parts?: number;
}

/**
 * Stateful testing runs apart, for a time: hypothesis ends a stateful run early when a replayed
 * scenario answers differently (the platform's data has moved on), so a number of scenarios
 * alone left links unvisited; within the time, runs follow one another with the next seed. The
 * examples phase runs again before it because some links are inferred from its answers.
 */
function defaultPasses(budget: string[]): Pass[] {
  return [
    {
      name: `examples, coverage and fuzzing, ${MAX_EXAMPLES || 'the configured number of'} examples per operation`,
      args: ['--phases', 'examples,coverage,fuzzing', ...budget],
      parts: GENERATING_PARTS,
    },
    {
      name: `stateful scenarios for ${STATEFUL_SECONDS} s`,
      args: ['--phases', 'examples,stateful', '--max-time', STATEFUL_SECONDS],
    },
  ];
}

/** The `data` of a successful answer; otherwise an error naming the request. */
function data<T>(reply: Reply, what: string): T {
  if (reply.status < 200 || reply.status >= 300) {
    throw new Error(`${what} answered ${reply.status}: ${reply.text}`);
  }
  return (reply.body as { data: T }).data;
}

/**
 * The deliveries the seed creates, for schemathesis to read, cancel and fail (hooks.py): one
 * searched for at once, which ends NO_COURIER_FOUND early in the run (nobody reports a position),
 * and two SCHEDULED a few days ahead, which stay REQUEST_CREATED, so that cancels are accepted
 * (twice in 3 hours) as well as refused.
 */
const SEEDED_DELIVERIES: Record<string, unknown>[] = [
  {},
  ...Array.from({ length: 2 }, () => ({
    urgencyType: 'SCHEDULED',
    deliveryDate: new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10),
    deliverySlot: '09:00 - 12:00',
  })),
];
/**
 * What the seed credits: room for every delivery the stateful phase can create (a Lagos trip
 * costs a few thousand NGN) in the longest run, so that a request is refused for its wallet
 * (422) only when its own fields make it dear.
 */
const SEED_CREDIT_NGN = 50_000_000;
/**
 * Free packages the hooks put in generated requests and quotes, so that these get past "Invalid
 * packages selection" (every random id meets it first) to the checks after it. A request that
 * succeeds takes its packages; the others are then refused for them, as for a random id.
 */
const FREE_PACKAGES = 24;

interface Seeded {
  apiKey: string;
  courierToken: string;
  deliveryIds: string[];
  packageIds: string[];
  courierIds: string[];
}

/**
 * Seeds the run's data; returns the API key and the courier token schemathesis authenticates
 * with, and the deliveries it created.
 */
async function seed(base: string): Promise<Seeded> {
  const { userId, key } = await createUserWithKey(base, { environment: 'staging' });
  const who = { key, userId };
  await credit(base, who, SEED_CREDIT_NGN);
  const b = boundary();
  const file = { name: 'upload-file', filename: 'dot.png', contentType: 'image/png' };
  const upload = data<{ url: string }>(
    await request(base, 'POST', '/file/single-upload', {
      headers: { 'api-key': key, 'content-type': multipartType(b) },
      raw: await multipartBuffer([{ ...file, data: TINY_PNG }], b),
    }),
    'POST /file/single-upload',
  );
  data(
    await request(base, 'POST', '/api/package', {
      headers: { 'api-key': key },
      json: {
        packageType: 'Documents',
        name: 'Seeded package',
        image: upload.url,
        quantity: 1,
        size: 'SMALL',
        value: 5000,
      },
    }),
    'POST /api/package',
  );
  const fleetTypes = data<{ id: string }[]>(
    await request(base, 'GET', '/admin/fleet-types', { headers: adminHeaders }),
    'GET /admin/fleet-types',
  );
  const courier = data<{ id: string }>(
    await request(base, 'POST', '/admin/couriers', {
      headers: adminHeaders,
      json: {
        name: 'Seeded Courier',
        phone: '+2348031234567',
        profilePhoto: upload.url,
        fleet: {
          typeId: fleetTypes[0].id,
          regNo: 'SEED-1',
          make: 'Bajaj',
          model: 'Boxer',
          colour: 'Red',
        },
      },
    }),
    'POST /admin/couriers',
  );
  data(
    await request(base, 'POST', '/admin/pricing/courier-rules', {
      headers: adminHeaders,
      json: { courierId: courier.id, from: 'Lagos', to: 'Ikeja, Lagos', amountKobo: 150000 },
    }),
    'POST /admin/pricing/courier-rules',
  );
  const listed = await request(base, 'PUT', `/admin/users/${userId}/couriers/${courier.id}`, {
    headers: adminHeaders,
  });
  if (listed.status !== 204) throw new Error(`PUT a merchant courier answered ${listed.status}`);
  const { token } = data<{ token: string }>(
    await request(base, 'POST', `/admin/couriers/${courier.id}/tokens`, { headers: adminHeaders }),
    'POST /admin/couriers/:courierId/tokens',
  );
  // Deliveries of packages of their own, paid from the wallet: the delivery routes answer them
  // rather than 404 only (a POST /api/request that schemathesis makes succeed is rare, and only
  // its links reach them).
  const deliveryIds: string[] = [];
  for (const [i, fields] of SEEDED_DELIVERIES.entries()) {
    const packageId = await savePackage(base, who, { name: `Seeded delivery ${i + 1}` });
    const created = data<{ deliveryId: string }>(
      await requestDelivery(base, who, [packageId], fields),
      'POST /api/request',
    );
    deliveryIds.push(created.deliveryId);
  }
  const packageIds: string[] = [];
  for (let i = 1; i <= FREE_PACKAGES; i += 1) {
    packageIds.push(await savePackage(base, who, { name: `Free package ${i}` }));
  }
  return { apiKey: key, courierToken: token, deliveryIds, packageIds, courierIds: [courier.id] };
}

/** Where a schemathesis process's output goes: `stdout` and `stderr`. */
interface Output {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const LIVE: Output = { stdout: process.stdout, stderr: process.stderr };

/** An output kept until the process ends, both streams in one text, for a part run at once. */
function keptOutput(): Output & { text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return { stdout: stream, stderr: stream, text: () => chunks.join('') };
}

/** Runs schemathesis; resolves with its exit status once its output is all written. */
function schemathesis(
  bin: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  output: Output,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    const relayed = Promise.all([
      relayWithoutPytestRulers(child.stdout, output.stdout),
      relayWithoutPytestRulers(child.stderr, output.stderr),
    ]);
    child.once('error', (error) => {
      running.delete(child);
      reject(error);
    });
    child.once('exit', (code, signal) => {
      running.delete(child);
      const status = code ?? 128 + (signal ? constants.signals[signal] : 0);
      // Its last lines are still in the pipes when it exits.
      void relayed.then(() => resolve(status), reject);
    });
  });
}

/**
 * One pass: a schemathesis process, or `pass.parts` at once, each on its share of the
 * operations, with reports of its own, the first printing as it goes and the others after it.
 * Each process mints Idempotency-Keys under its own number (`part`, hooks.py). Resolves with
 * the first failing status, else 0.
 */
async function runPass(
  bin: string,
  pass: Pass,
  passNumber: number,
  common: string[],
  env: NodeJS.ProcessEnv,
  base: string,
): Promise<number> {
  const parts = pass.parts ?? 1;
  if (parts === 1) {
    const reports = ['--report', 'junit,ndjson', '--report-dir', OUT];
    const partEnv = { ...env, WAYBILL_ST_PART: `${passNumber}` };
    return schemathesis(bin, [...common, ...reports, ...pass.args], partEnv, LIVE);
  }
  const served = await request(base, 'GET', '/openapi.json');
  if (served.status !== 200) throw new Error(`GET /openapi.json answered ${served.status}`);
  const patterns = sharePatterns(operationNames(served.body as OpenApiPaths), parts);
  const kept = patterns.map((_pattern, i) => (i === 0 ? undefined : keptOutput()));
  const statuses = await Promise.all(
    patterns.map((pattern, i) => {
      const part = `${passNumber}${i + 1}`;
      const reports = [
        '--report',
        'junit,ndjson',
        '--report-junit-path',
        join(OUT, `junit-part${part}.xml`),
        '--report-ndjson-path',
        join(OUT, `ndjson-part${part}.ndjson`),
      ];
      const args = [...common, ...reports, ...pass.args, '--include-name-regex', pattern];
      const run = schemathesis(bin, args, { ...env, WAYBILL_ST_PART: part }, kept[i] ?? LIVE);
      return run.then((status) => {
        log(`part ${i + 1} of ${parts} exited with ${status}`);
        return status;
      });
    }),
  );
  for (const [i, output] of kept.entries()) {
    if (!output) continue;
    log(`part ${i + 1} of ${parts}, as it printed:`);
    process.stdout.write(output.text());
  }
  return statuses.find((status) => status !== 0) ?? 0;
}

async function main(): Promise<number> {
  const [bin, ...extra] = process.argv.slice(2);
  if (!bin) throw new Error('usage: schemathesis-run.ts <schemathesis> [run arguments...]');
  mkdirSync(OUT, { recursive: true });
  for (const name of readdirSync(OUT)) {
    // This run's reports only.
    if (/^(junit-.*\.xml|ndjson-.*\.ndjson)$/.test(name)) rmSync(join(OUT, name));
  }

  const iso = isolation();
  let node: NodeProcess | undefined;
  try {
    log(`starting the platform (namespace ${iso.namespace})`);
    // Every request comes from one address, and the checks send many without credentials:
    // neither the quota nor the failed-authentication throttle may turn those into 429s.
    const limits = {
      QUOTA_LIMIT: '1000000',
      AUTH_FAILURE_LIMIT: '1000000',
      PAGE_REQUEST_LIMIT: '1000000',
    };
    // Offline, only local hosts resolve: webhook endpoints on them let the stateful phase
    // follow a created endpoint's links (rotate, list, delete).
    const webhooks = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
    node = await startNode({ services: 'all', iso, env: { ...limits, ...webhooks } });
    if (interrupted) return SIGNALS[interrupted];
    const { apiKey, courierToken, deliveryIds, packageIds, courierIds } = await seed(node.url);
    if (interrupted) return SIGNALS[interrupted];

    const run = ['run', `${node.url}/openapi.json`, '--checks', 'all', '--seed', SEED];
    const env = {
      ...process.env,
      WAYBILL_ST_API_KEY: apiKey,
      WAYBILL_ST_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_ST_COURIER_TOKEN: courierToken,
      WAYBILL_ST_DELIVERY_IDS: deliveryIds.join(','),
      WAYBILL_ST_PACKAGE_IDS: packageIds.join(','),
      WAYBILL_ST_COURIER_IDS: courierIds.join(','),
    };
    const budget = MAX_EXAMPLES ? ['--max-examples', MAX_EXAMPLES] : [];
    // Extra arguments make one run of their own; otherwise the two of PASSES.
    const passes: Pass[] =
      extra.length > 0 ? [{ name: 'as asked', args: extra }] : defaultPasses(budget);
    let status = 0;
    const common = ['--no-color', '--config-file', CONFIG, ...run];
    for (const [i, pass] of passes.entries()) {
      const shared = pass.parts ? `, in ${pass.parts} processes at once` : '';
      log(`schemathesis against ${node.url}, seed ${SEED}: ${pass.name}${shared}`);
      const started = Date.now();
      const passStatus = await runPass(bin, pass, i + 1, common, env, node.url);
      const seconds = Math.round((Date.now() - started) / 1000);
      log(`schemathesis (${pass.name}) took ${seconds} s and exited with ${passStatus}`);
      if (interrupted) return SIGNALS[interrupted];
      status ||= passStatus;
    }
    return status;
  } finally {
    if (node) {
      await node.stop();
      writeFileSync(join(OUT, 'server.log'), node.output());
    }
    await dropDatabases(iso).catch((error: unknown) => {
      log(`could not drop the databases ${iso.dbPrefix}*: ${String(error)}`);
    });
  }
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    log(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(interrupted ? SIGNALS[interrupted] : 1);
  },
);

/**
 * File upload benchmark: a generated file (200 MB by default) uploaded through the gateway
 * and the file service, next to a direct lib-storage Upload of the same bytes to the same S3
 * server, in the same run; then downloaded through the gateway, next to a direct GetObject;
 * peak RSS of the server processes while they work. Prints the goals of issue 15.
 */
import { loadavg } from 'node:os';
import { Readable } from 'node:stream';
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { PART_QUEUE, PART_SIZE } from '../services/file/store';
import { directS3, S3_BUCKET } from '../test/support/s3';
import { createUserWithKey } from '../test/support/http';
import {
  HEADS,
  boundary,
  generatedFile,
  multipartStream,
  multipartType,
} from '../test/support/multipart';
import {
  cpuTimeMs,
  dropDatabases,
  isolation,
  rssKb,
  startNodes,
  type NodeProcess,
} from '../test/support/stack';
import {
  option,
  requireInfrastructure,
  showHelpIfAsked,
  withDeployedNodeOptions,
} from './bench-support';

showHelpIfAsked(`
npm run bench:files [-- --mb 200 --runs 2]

Uploads a generated file (--mb MB, default 200) through the gateway and the file service,
then downloads it back, --runs times (default 2), next to a direct lib-storage Upload and a
direct GetObject of the same bytes to the same S3 server in the same run. Two topologies: the
file service in its own process (bodies over its transfer port, the production shape) and
every service in one process. Prints MB/s, the ratios to the direct paths, and each server
process's peak RSS growth, against the goals: upload ≥ 0.7× direct, growth < 64 MB.

Needs the local infrastructure: scripts/infra up && eval "$(scripts/infra env)".
Every object and database it writes is deleted at the end; its processes are stopped.
`);

/** Issue 15's goals: an upload through the gateway at least this share of a direct one... */
const GOAL_RATIO = 0.7;
/** ...and no server process growing more than this, in MB, while it moves the file. */
const GOAL_GROWTH_MB = 64;

const SIZE_MB = option('mb', 200);
const RUNS = option('runs', 2);
const SIZE = SIZE_MB * 1024 * 1024;
const CDN = 'https://cdn.waybill.bench';

requireInfrastructure(['MONGO_URL', 'NATS_URL', 'REDIS_URL', 'S3_ENDPOINT']);

const bucket = S3_BUCKET;
const s3 = directS3(30_000);
const written: string[] = [];

const mb = (bytes: number) => bytes / 2 ** 20;

/** CPU seconds a process has used (user + system): load on a shared machine does not change it. */
const cpuSeconds = (pid: number) => cpuTimeMs(pid) / 1000;

/** Samples the RSS of processes every 20 ms; `stop()` returns baseline, peak (MB) and CPU s. */
function sampleRss(pids: Record<string, number>) {
  const cpu = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuSeconds(pid)]));
  const baseline = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, rssKb(pid)]));
  const peak = { ...baseline };
  const timer = setInterval(() => {
    for (const [name, pid] of Object.entries(pids)) {
      peak[name] = Math.max(peak[name], rssKb(pid));
    }
  }, 20);
  return () => {
    clearInterval(timer);
    return Object.fromEntries(
      Object.entries(pids).map(([n, pid]) => [
        n,
        { baseline: baseline[n] / 1024, peak: peak[n] / 1024, cpu: cpuSeconds(pid) - cpu[n] },
      ]),
    );
  };
}

async function directUpload(): Promise<number> {
  const key = `bench/direct-${Date.now()}.pdf`;
  written.push(key);
  const started = process.hrtime.bigint();
  await new Upload({
    client: s3,
    params: {
      Bucket: bucket,
      Key: key,
      Body: Readable.from(generatedFile(HEADS.pdf, SIZE)),
      ContentType: 'application/pdf',
    },
    partSize: PART_SIZE,
    queueSize: PART_QUEUE,
  }).done();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function directDownload(key: string): Promise<number> {
  const started = process.hrtime.bigint();
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  let size = 0;
  for await (const chunk of object.Body as Readable) size += (chunk as Buffer).length;
  if (size !== SIZE) throw new Error(`direct download read ${size} bytes`);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function downloadThroughGateway(base: string, apiKey: string, key: string) {
  const started = process.hrtime.bigint();
  const res = await fetch(`${base}/file/download`, {
    method: 'POST',
    headers: { 'api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${CDN}/${key}` }),
  });
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) size += chunk.length;
  if (res.status !== 200 || size !== SIZE) {
    throw new Error(`download failed: ${res.status}, ${size} bytes`);
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

async function throughGateway(base: string, apiKey: string): Promise<number> {
  const b = boundary();
  const body = multipartStream(
    [{ name: 'upload-file', filename: 'bench.pdf', data: () => generatedFile(HEADS.pdf, SIZE) }],
    b,
  );
  const started = process.hrtime.bigint();
  const res = await fetch(`${base}/file/single-upload`, {
    method: 'POST',
    headers: { 'api-key': apiKey, 'content-type': multipartType(b) },
    body: Readable.toWeb(body) as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  const reply = (await res.json()) as { data?: { url?: string }; message?: string };
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (res.status !== 200 || !reply.data?.url) {
    throw new Error(`upload failed: ${res.status} ${reply.message ?? ''}`);
  }
  written.push(reply.data.url.slice(CDN.length + 1));
  return seconds;
}

interface Topology {
  name: string;
  nodes: Record<string, NodeProcess>;
  url: string;
}

async function startTopology(name: string, split: boolean, iso = isolation()) {
  const env = {
    CDN_BASE_URL: CDN,
    FILE_MAX_BYTES: String(SIZE + 1024 * 1024),
    // Throughput, not the daily budget: `--runs` of `--mb` may pass 1 GB for one key's user.
    FILE_MAX_UPLOAD_BYTES_PER_USER_PER_DAY: '0',
    LOG_LEVEL: 'error',
  };
  const groups = split ? ['gateway,account', 'file'] : ['all'];
  const started: NodeProcess[] = [];
  try {
    await startNodes(started, groups, {
      iso,
      // The file service with its pod's NODE_OPTIONS (deploy/k8s): its memory and CPU a pod's.
      perProcess: (services) => ({
        env: services === 'file' ? withDeployedNodeOptions('file', env) : env,
      }),
    });
  } catch (err) {
    await Promise.all(started.map((node) => node.stop()));
    await dropDatabases(iso);
    throw err;
  }
  const nodes: Record<string, NodeProcess> = split
    ? { gateway: started[0], file: started[1] }
    : { 'all services': started[0] };
  const topology: Topology = { name, nodes, url: (nodes.gateway ?? nodes['all services']).url };
  return { topology, iso };
}

async function waitForFiles(base: string, apiKey: string) {
  for (let i = 0; i < 150; i++) {
    const res = await fetch(`${base}/file/download`, {
      method: 'POST',
      headers: { 'api-key': apiKey, 'content-type': 'application/json' },
      body: '{}',
    });
    if (res.status !== 503) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the file service did not show up');
}

const DIRECT_UP = 'direct lib-storage Upload → S3';
const DIRECT_DOWN = 'direct GetObject ← S3';

interface Row {
  path: string;
  seconds: number;
  rss?: Record<string, { baseline: number; peak: number; cpu: number }>;
  /** CPU seconds of this benchmark's own process (the client side, or the direct path). */
  clientCpu?: number;
}

async function main() {
  console.log(`bench:files: ${SIZE_MB} MB generated per upload, ${RUNS} run(s) each`);
  console.log(
    `load average at the start: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  console.log(
    `S3 ${process.env.S3_ENDPOINT}, bucket ${bucket}; part ${mb(PART_SIZE)} MB × ${PART_QUEUE}\n`,
  );
  const rows: Row[] = [];
  // Each stopped at the end, however far the start got.
  const topologies: Awaited<ReturnType<typeof startTopology>>[] = [];
  try {
    topologies.push(await startTopology('gateway → transfer port → file service → S3', true));
    topologies.push(await startTopology('one process (gateway + file service) → S3', false));
    const keys = await Promise.all(
      topologies.map(async ({ topology }) => {
        const { key } = await createUserWithKey(topology.url);
        await waitForFiles(topology.url, key);
        return key;
      }),
    );
    const measured = async (
      path: string,
      move: () => Promise<number>,
      pids: Record<string, number> = {},
    ) => {
      const stop = sampleRss(pids);
      const cpu = process.cpuUsage();
      let seconds = Number.NaN;
      try {
        seconds = await move();
      } finally {
        const used = process.cpuUsage(cpu);
        rows.push({ path, seconds, rss: stop(), clientCpu: (used.user + used.system) / 1e6 });
      }
    };
    for (let run = 1; run <= RUNS; run++) {
      await measured(DIRECT_UP, directUpload);
      await measured(DIRECT_DOWN, () => directDownload(written[written.length - 1]));
      for (const [i, { topology }] of topologies.entries()) {
        const pids = Object.fromEntries(
          Object.entries(topology.nodes).map(([n, node]) => [n, node.child.pid as number]),
        );
        await measured(
          `upload: ${topology.name}`,
          () => throughGateway(topology.url, keys[i]),
          pids,
        );
        const key = written[written.length - 1];
        await measured(
          `download: ${topology.name}`,
          () => downloadThroughGateway(topology.url, keys[i], key),
          pids,
        );
      }
    }
  } finally {
    await Promise.all(
      topologies.flatMap(({ topology }) => Object.values(topology.nodes).map((n) => n.stop())),
    );
    await Promise.all(topologies.map(({ iso }) => dropDatabases(iso)));
    await Promise.all(
      written.map((key) => s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))),
    );
    s3.destroy();
  }

  const best = new Map<string, Row>();
  /** Per process: RSS before the first upload and the highest seen in any run. */
  const memory = new Map<string, { baseline: number; peak: number }>();
  for (const row of rows) {
    const mbps = SIZE_MB / row.seconds;
    const rss = Object.entries(row.rss ?? {})
      .map(
        ([n, r]) =>
          `${n} ${r.baseline.toFixed(0)} → ${r.peak.toFixed(0)} MB, ${r.cpu.toFixed(2)} s CPU`,
      )
      .join(', ');
    console.log(
      `${row.path.padEnd(44)} ${row.seconds.toFixed(2).padStart(6)} s ${mbps.toFixed(1).padStart(7)} MB/s  ` +
        `bench process ${row.clientCpu?.toFixed(2)} s CPU${rss ? `; ${rss}` : ''}`,
    );
    const previous = best.get(row.path);
    if (!previous || row.seconds < previous.seconds) best.set(row.path, row);
    for (const [n, r] of Object.entries(row.rss ?? {})) {
      const name = `${row.path.replace(/^(upload|download): /, '')}: ${n}`;
      const seen = memory.get(name);
      memory.set(name, {
        baseline: seen?.baseline ?? r.baseline,
        peak: Math.max(seen?.peak ?? 0, r.peak),
      });
    }
  }
  const directUp = best.get(DIRECT_UP) as Row;
  const directDown = best.get(DIRECT_DOWN) as Row;
  console.log(
    `\nbest run of each, against the direct path (upload ${(SIZE_MB / directUp.seconds).toFixed(1)} MB/s, ` +
      `download ${(SIZE_MB / directDown.seconds).toFixed(1)} MB/s):`,
  );
  for (const [path, row] of best) {
    if (row === directUp || row === directDown) continue;
    const upload = path.startsWith('upload');
    const ratio = (upload ? directUp : directDown).seconds / row.seconds;
    const goal = upload ? `  goal ≥ ${GOAL_RATIO}: ${ratio >= GOAL_RATIO ? 'met' : 'MISSED'}` : '';
    console.log(
      `  ${path}: ${(SIZE_MB / row.seconds).toFixed(1)} MB/s, ratio ${ratio.toFixed(2)}${goal}`,
    );
  }
  // Time on a shared machine follows the others' load; CPU per MB much less: it tells which
  // process a path's cost is in, against the direct path's own (the bench process).
  console.log('CPU ms per MB moved, the run of least CPU of each path (bench = this process):');
  const cheapest = new Map<string, Row>();
  const totalCpu = (row: Row) =>
    (row.clientCpu ?? 0) + Object.values(row.rss ?? {}).reduce((sum, r) => sum + r.cpu, 0);
  for (const row of rows) {
    const seen = cheapest.get(row.path);
    if (!seen || totalCpu(row) < totalCpu(seen)) cheapest.set(row.path, row);
  }
  const perMb = (seconds: number) => ((seconds * 1000) / SIZE_MB).toFixed(1);
  for (const [path, row] of cheapest) {
    const parts = [
      `bench ${perMb(row.clientCpu ?? 0)}`,
      ...Object.entries(row.rss ?? {}).map(([n, r]) => `${n} ${perMb(r.cpu)}`),
    ];
    console.log(`  ${path}: ${parts.join(', ')}; total ${perMb(totalCpu(row))}`);
  }
  console.log('peak RSS over all runs (before the first transfer → peak):');
  for (const [name, r] of memory) {
    const growth = r.peak - r.baseline;
    console.log(
      `  ${name}: ${r.baseline.toFixed(0)} → ${r.peak.toFixed(0)} MB (+${growth.toFixed(0)} MB)` +
        `  goal < ${GOAL_GROWTH_MB} MB: ${growth < GOAL_GROWTH_MB ? 'met' : 'MISSED'}`,
    );
  }
  console.log(
    `load average at the end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
}

main().catch((err: unknown) => {
  console.error('bench:files failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});

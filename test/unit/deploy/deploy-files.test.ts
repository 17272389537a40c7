/**
 * The deployment files (Dockerfile, docker-compose.yml, deploy/k8s) cannot be built or run
 * here, so they are parsed and checked against the code: one container and one Deployment per
 * entry of SERVICE_NAMES, and only environment variables that libs/config.ts knows.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import {
  EXAMPLE_PLACEHOLDER,
  SERVICE_NAMES,
  describeConfig,
  loadConfig,
  secretsOf,
  SECRET_READERS,
  type ServiceName,
} from '../../../libs/config';
import { fileProcessMemoryBound } from '../../../services/file/memory';
import { IMAGE_ENTRY } from '../../../scripts/bench-support';
import { PRINT_HEAP_LIMIT_MB, numberPrintedByNode } from '../helpers';
import {
  K8S_DIR,
  deployedMemoryMb,
  deployedNodeOptions,
  memoryFit,
  requestFor,
} from '../../../scripts/lib/manifests';

const ROOT = join(__dirname, '..', '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Every variable loadConfig reads; a name outside it is a typo or a forgotten variable. */
/** Ours, plus NODE_OPTIONS, which Node itself reads (each pod states its V8 heap). */
const CONFIG_VARIABLES = new Set([...describeConfig().map((v) => v.name), 'NODE_OPTIONS']);
/** Variables that only tests set (`Tests only` in their description): no deployment may. */
const TEST_ONLY_VARIABLES = describeConfig()
  .filter((v) => v.description.startsWith('Tests only'))
  .map((v) => v.name);
const OPS_PORT = 9464;
const HTTP_PORT = 3000;

// ---------------------------------------------------------------- docker-compose.yml

type EnvValue = string | number | boolean | null;
interface ComposeService {
  image?: string;
  build?: unknown;
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, EnvValue> | string[];
  ports?: (string | number | { target: number; published?: string | number; host_ip?: string })[];
  /** Ports other containers reach, never published on the host. */
  expose?: string[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  restart?: string;
  profiles?: string[];
  volumes?: string[];
  /** How long Compose waits after SIGTERM before it kills the container: `25s`, `1m30s`. */
  stop_grace_period?: string;
}
interface ComposeFile {
  'x-waybill': ComposeService;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

// `merge: true`: the file shares settings through `<<` merge keys, as Compose reads them.
const compose = parse(read('docker-compose.yml'), { merge: true }) as ComposeFile;
const services = compose.services;
const waybill = compose['x-waybill'];

function envOf(service: ComposeService): Record<string, string> {
  const env = service.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((line) => {
        const at = line.indexOf('=');
        return at < 0 ? [line, ''] : [line.slice(0, at), line.slice(at + 1)];
      })
    : Object.entries(env).map(([k, v]) => [k, v == null ? '' : String(v)]);
  return Object.fromEntries(entries) as Record<string, string>;
}

const words = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value : (value ?? '').split(/\s+/).filter(Boolean);

const dependencies = (service: ComposeService): Record<string, string> => {
  const deps = service.depends_on ?? {};
  return Array.isArray(deps)
    ? Object.fromEntries(deps.map((name) => [name, 'service_started']))
    : Object.fromEntries(
        Object.entries(deps).map(([n, d]) => [n, d.condition ?? 'service_started']),
      );
};

/** [host ip or '' for all interfaces, container port] of each published port. */
function publishedPorts(service: ComposeService): [string, number][] {
  return (service.ports ?? []).map((p) => {
    if (typeof p === 'object') return [p.host_ip ?? '', p.target];
    const parts = String(p).split(':');
    const target = Number(parts[parts.length - 1].split('/')[0]);
    return [parts.length === 3 ? parts[0] : '', target];
  });
}

const isOneShot = (service: ComposeService) => service.restart === 'no';
const runsWaybillImage = (service: ComposeService) => service.image === waybill.image;

/** The secrets docker-compose.yml sets at all: the others are left to staging's defaults. */
const COMPOSE_SECRETS: string[] = [
  ...new Set(
    Object.values(services)
      .filter(runsWaybillImage)
      .flatMap((service) => Object.keys(envOf(service)))
      .filter((k) => k in SECRET_READERS),
  ),
];

/** `${VAR:-default}` as Compose reads it with VAR unset. */
const withComposeDefaults = (value: string) =>
  value.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, (_m, fallback: string) => fallback);

/** A Compose duration (`20s`, `1m30s`, `500ms`) in ms. */
function composeDurationMs(value: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001 };
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g)];
  expect(parts.map((p) => p[0]).join('')).toBe(value);
  return parts.reduce((ms, [, amount, unit]) => ms + Number(amount) * units[unit], 0);
}

/**
 * What a process needs after STOP_GRACE_MS to log that it gave up and exit 1, before it is
 * killed: a kill at the same moment would race it.
 */
const EXIT_MARGIN_MS = 1_000;

describe('docker-compose.yml', () => {
  it('runs the infrastructure: mongo, nats, redis and an S3 gateway', () => {
    expect(services.mongo?.image).toMatch(/^mongo:8/);
    expect(services.nats?.image).toMatch(/^nats:2\.10/);
    expect(services.redis?.image).toMatch(/^redis:7/);
    expect(services.s3?.image).toMatch(/^versity\/versitygw/);
    // Pinned, as the local infrastructure is: a release of theirs never changes ours unseen.
    const infra = read('scripts/infra');
    const version = /VERSITYGW_VERSION="(v[\d.]+)"/.exec(infra)?.[1];
    expect(services.s3?.image).toBe(`versity/versitygw:${version}`);
    for (const service of Object.values(services)) {
      expect(service.image ?? '').not.toMatch(/:latest$|^[^:]+$/);
    }
    expect(words(services.s3.command)).toEqual(['posix', '/data']);
    expect(Object.keys(envOf(services.s3))).toEqual(
      expect.arrayContaining(['ROOT_ACCESS_KEY_ID', 'ROOT_SECRET_ACCESS_KEY']),
    );
  });

  it('shares one image and build through the x-waybill anchor', () => {
    expect(waybill.image).toEqual(expect.any(String));
    expect(waybill.build).toBeDefined();
  });

  it.each(SERVICE_NAMES)('has a container for the %s service, running only it', (name) => {
    const service = services[name];
    expect(service).toBeDefined();
    expect(service.image).toBe(waybill.image);
    expect(service.build).toEqual(waybill.build);
    expect(envOf(service).SERVICES).toBe(name);
    expect(service.command).toBeUndefined(); // the image's CMD: dist/bin/server.js
    expect(service.restart).toBe('unless-stopped');
  });

  it('runs the Waybill image only as a SERVICE_NAMES container or a one-shot CLI command', () => {
    const names: readonly string[] = SERVICE_NAMES;
    for (const [name, service] of Object.entries(services)) {
      if (!runsWaybillImage(service)) continue;
      if (names.includes(name)) continue;
      expect({ name, oneShot: isOneShot(service) }).toEqual({ name, oneShot: true });
      expect(words(service.command).slice(0, 2)).toEqual(['node', 'dist/bin/waybill.js']);
    }
  });

  it('has a one-shot seed container running the CLI seed command', () => {
    const pkg = JSON.parse(read('package.json')) as { bin: Record<string, string> };
    expect(words(services.seed?.command)).toEqual(['node', pkg.bin.waybill, 'seed']);
    expect(isOneShot(services.seed)).toBe(true);
    expect(runsWaybillImage(services.seed)).toBe(true);
  });

  it('connects every Waybill container to the infrastructure containers it reads', () => {
    const hosts: Record<string, [string, string]> = {
      NATS_URL: ['nats:', 'nats'],
      MONGO_URL: ['mongodb:', 'mongo'],
      REDIS_URL: ['redis:', 'redis'],
      S3_ENDPOINT: ['http:', 's3'],
    };
    for (const [name, service] of Object.entries(services)) {
      if (!runsWaybillImage(service)) continue;
      const env = envOf(service);
      for (const [variable, [protocol, host]] of Object.entries(hosts)) {
        // A server's URL is a secret (it may hold credentials): given to its readers only.
        if (!(variable in env) && variable in SECRET_READERS) continue;
        const url = new URL(env[variable] ?? 'missing:');
        expect({ name, variable, protocol: url.protocol, host: url.hostname }).toEqual({
          name,
          variable,
          protocol,
          host,
        });
      }
      expect(env.S3_BUCKET).toBe(envOf(services['s3-init']).S3_BUCKET);
    }
  });

  it.each(SERVICE_NAMES)(
    'gives the %s container the secrets its service reads, no other',
    (name) => {
      const given = Object.keys(envOf(services[name])).filter((k) => k in SECRET_READERS);
      expect(given.sort()).toEqual(
        secretsOf([name])
          .filter((k) => COMPOSE_SECRETS.includes(k))
          .sort(),
      );
      // As Compose starts it with nothing set, it starts.
      const env = Object.fromEntries(
        Object.entries(envOf(services[name])).map(([k, v]) => [k, withComposeDefaults(v)]),
      );
      expect(loadConfig(env).services).toEqual([name]);
    },
  );

  it('gives every secret Compose sets to the one-shot toolbox only, for the CLI', () => {
    const toolbox = services.toolbox;
    expect(isOneShot(toolbox)).toBe(true);
    expect(toolbox.profiles).toEqual(['tools']);
    const given = Object.keys(envOf(toolbox)).filter((k) => k in SECRET_READERS);
    expect(given.sort()).toEqual([...COMPOSE_SECRETS].sort());
    // `files …` runs the file service's code and checks the account database first.
    expect(secretsOf(['file', 'account']).filter((k) => COMPOSE_SECRETS.includes(k))).toEqual(
      expect.arrayContaining(['MONGO_URL', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY']),
    );
  });

  it('gives the seed command the secrets of the services it runs in its process, no other', () => {
    const given = Object.keys(envOf(services.seed)).filter((k) => k in SECRET_READERS);
    const runs = ['account', 'payment', 'geo', 'courier-matching'] as const;
    expect(given.sort()).toEqual(
      secretsOf(runs)
        .filter((k) => COMPOSE_SECRETS.includes(k))
        .sort(),
    );
    expect(read('bin/waybill.ts')).toContain(
      `withServices([${runs.map((r) => `'${r}'`).join(', ')}]`,
    );
  });

  it('sets only variables that libs/config.ts reads', () => {
    for (const [name, service] of Object.entries(services)) {
      if (!runsWaybillImage(service)) continue;
      const unknown = Object.keys(envOf(service)).filter((k) => !CONFIG_VARIABLES.has(k));
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    }
  });

  it('sets no variable meant for tests only', () => {
    expect(TEST_ONLY_VARIABLES).toContain('ORDER_FAULT');
    for (const [name, service] of Object.entries(services)) {
      const set = Object.keys(envOf(service)).filter((k) => TEST_ONLY_VARIABLES.includes(k));
      expect({ name, set }).toEqual({ name, set: [] });
    }
  });

  it('gives the admin token a default for the machine itself, which live refuses', () => {
    // As Compose starts it with nothing set: each `${NAME:-default}` is its default.
    const env = Object.fromEntries(
      Object.entries(envOf(services.gateway)).map(([k, v]) => [
        k,
        v.replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1'),
      ]),
    );
    const placeholder = /^\$\{ADMIN_TOKEN:-(.+)\}$/.exec(envOf(services.gateway).ADMIN_TOKEN)?.[1];
    expect(placeholder).toEqual(expect.any(String));
    expect(env.APP_ENV).toBe('staging');
    expect(loadConfig(env).adminToken).toBe(placeholder);
    // Anyone can read it here: a live deployment that kept it would hand out /admin.
    const live = { ...filledConfig, ...filledSecret, ADMIN_TOKEN: placeholder };
    expect(() => loadConfig(live)).toThrow(/^ADMIN_TOKEN: .*placeholder of docker-compose\.yml/);
  });

  it('publishes the API on the loopback interface only, as everything else', () => {
    // /admin answers the placeholder token: a machine with a public address would hand it out.
    expect(publishedPorts(services.gateway)).toEqual([['127.0.0.1', HTTP_PORT]]);
    for (const [name, service] of Object.entries(services)) {
      for (const [hostIp] of publishedPorts(service))
        expect({ name, hostIp }).toEqual({ name, hostIp: '127.0.0.1' });
    }
  });

  it('gives the file service a fixed transfer port, reachable by the gateways and not published', () => {
    const file = services.file;
    const port = Number(envOf(file).FILE_TRANSFER_PORT);
    expect(port).toBeGreaterThan(0);
    expect(file.expose).toEqual([String(port)]);
    expect(publishedPorts(file)).toEqual([]);
  });

  it('checks readiness of Waybill containers with node on the ops port', () => {
    for (const name of SERVICE_NAMES) {
      const test = words(services[name]?.healthcheck?.test).join(' ');
      expect(test).toMatch(/^CMD node -e /);
      expect(test).toContain('/health/ready');
      expect(test).toContain(String(OPS_PORT));
    }
  });

  it('waits only on conditions the dependencies can reach', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependencies(service))) {
        const target = services[dep];
        expect({ name, dep, exists: target !== undefined }).toEqual({ name, dep, exists: true });
        if (condition === 'service_healthy') {
          const hasCheck = Boolean(target.healthcheck?.test) && !target.healthcheck?.disable;
          expect({ name, dep, hasCheck }).toEqual({ name, dep, hasCheck: true });
        }
        if (condition === 'service_completed_successfully') {
          expect({ name, dep, oneShot: isOneShot(target) }).toEqual({ name, dep, oneShot: true });
        }
      }
    }
    for (const name of SERVICE_NAMES) {
      expect(dependencies(services[name] ?? {})).toMatchObject({
        mongo: 'service_healthy',
        redis: 'service_healthy',
        nats: expect.any(String),
        's3-init': 'service_completed_successfully',
      });
    }
  });

  it('creates the bucket with a one-shot container', () => {
    const init = services['s3-init'];
    expect(isOneShot(init)).toBe(true);
    const script = words(init.command).join(' ');
    expect(script).toContain('http://s3:7070');
    expect(script).toMatch(/s3 mb/);
    expect(envOf(init).S3_BUCKET).toBe('waybill');
  });

  it.each(SERVICE_NAMES)('lets %s stop (STOP_GRACE_MS) before Compose kills it', (name) => {
    const service = services[name];
    const env = Object.fromEntries(
      Object.entries(envOf(service)).map(([k, v]) => [k, withComposeDefaults(v)]),
    );
    const { stopGraceMs } = loadConfig(env);
    // Compose's default is 10 s.
    const graceMs = composeDurationMs(service.stop_grace_period ?? '10s');
    expect(stopGraceMs + EXIT_MARGIN_MS).toBeLessThanOrEqual(graceMs);
  });

  it('runs Redis bounded without eviction, its writes kept across a restart', () => {
    const flags = words(services.redis.command).join(' ');
    expect(flags).toMatch(/--maxmemory \S+ --maxmemory-policy noeviction/);
    expect(flags).toMatch(/--appendonly yes --appendfsync everysec/);
    expect(services.redis.volumes).toEqual(['redis-data:/data']);
  });

  it('declares every named volume it mounts', () => {
    const declared = Object.keys(compose.volumes ?? {});
    for (const service of Object.values(services)) {
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0];
        if (!/^[./~]/.test(source)) expect(declared).toContain(source);
      }
    }
  });
});

// ---------------------------------------------------------------- Dockerfile

interface Instruction {
  op: string;
  args: string;
}

/** Instructions grouped by stage; continuation lines joined, comments dropped. */
function parseDockerfile(text: string): Instruction[][] {
  const logical = text
    .split('\n')
    .filter((line) => !/^\s*#/.test(line))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const stages: Instruction[][] = [];
  for (const line of logical) {
    const [, op, args] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const instruction = { op: op.toUpperCase(), args };
    if (instruction.op === 'FROM') stages.push([]);
    stages[stages.length - 1]?.push(instruction);
  }
  return stages;
}

const stages = parseDockerfile(read('Dockerfile'));
const finalStage = stages[stages.length - 1];
const buildStage = stages.find((s) => /\bAS\s+build$/i.test(s[0].args)) ?? [];
const ops = (stage: Instruction[], op: string) => stage.filter((i) => i.op === op);
const lastOp = (stage: Instruction[], op: string) => ops(stage, op).at(-1)?.args;

/** `COPY` sources of a stage that come from the build context (not `--from=`). */
const contextSources = (stage: Instruction[]) =>
  ops(stage, 'COPY')
    .filter((i) => !/--from=/.test(i.args))
    .flatMap((i) =>
      i.args
        .split(/\s+/)
        .filter((w) => !w.startsWith('--'))
        .slice(0, -1),
    );

describe('Dockerfile', () => {
  it('is multi-stage on Node 24', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage[0].args).toMatch(/^node:24[-.\w]*(\s|$)/);
    expect(buildStage.length).toBeGreaterThan(0);
  });

  it('builds with npm ci and npm run build, then installs production dependencies only', () => {
    expect(ops(buildStage, 'RUN').map((i) => i.args)).toEqual(
      expect.arrayContaining([expect.stringMatching(/npm ci\b/), 'npm run build']),
    );
    const finalRuns = ops(finalStage, 'RUN').map((i) => i.args);
    expect(finalRuns.some((r) => /npm ci\b.*--omit=dev/.test(r))).toBe(true);
    expect(finalRuns.some((r) => /npm run build/.test(r))).toBe(false);
    expect(ops(finalStage, 'COPY').map((i) => i.args)).toContainEqual(
      expect.stringMatching(/^--from=build \/app\/dist \.\/dist$/),
    );
  });

  it('copies everything tsconfig.build.json compiles into the build stage', () => {
    const buildConfig = JSON.parse(read('tsconfig.build.json')) as {
      extends?: string;
      include: string[];
    };
    const sources = contextSources(buildStage).map((s) => s.replace(/^\.\//, ''));
    const needed = [
      'package.json',
      'package-lock.json',
      'tsconfig.build.json',
      ...(buildConfig.extends ? [buildConfig.extends.replace(/^\.\//, '')] : []),
      ...buildConfig.include,
    ];
    for (const path of needed) expect(sources).toContain(path);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const source of stages.flatMap(contextSources)) {
      const path = source.replace(/^\.\//, '');
      expect({ path, exists: existsSync(join(ROOT, path)) }).toEqual({ path, exists: true });
      expect(ignored).not.toContain(path);
    }
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.local', '.git']));
  });

  it('runs dist/bin/server.js as the non-root node user in production mode', () => {
    const user = lastOp(finalStage, 'USER');
    expect(user).toBe('node');
    // What bench:soak builds and runs, so that its memory is the image's.
    expect(JSON.parse(lastOp(finalStage, 'CMD') ?? 'null')).toEqual(['node', IMAGE_ENTRY]);
    const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe(`node ${IMAGE_ENTRY}`);
    expect(
      ops(finalStage, 'ENV')
        .map((i) => i.args)
        .join(' '),
    ).toMatch(/\bNODE_ENV=production\b/);
  });

  it('exposes the API and ops ports', () => {
    const exposed = ops(finalStage, 'EXPOSE').flatMap((i) => i.args.split(/\s+/).map(Number));
    expect(exposed).toEqual(expect.arrayContaining([HTTP_PORT, OPS_PORT]));
  });

  it('checks liveness with node, since the slim image has no curl', () => {
    const check = lastOp(finalStage, 'HEALTHCHECK') ?? '';
    const exec = JSON.parse(check.slice(check.indexOf('CMD') + 3)) as string[];
    expect(exec.slice(0, 2)).toEqual(['node', '-e']);
    expect(exec[2]).toContain(`${OPS_PORT}`);
    expect(exec[2]).toContain("'/health/live'");
  });

  it('health checks pass with OPS_PORT=0 (no endpoint), and fail when the endpoint does not answer 200', async () => {
    const check = lastOp(finalStage, 'HEALTHCHECK') ?? '';
    const live = (JSON.parse(check.slice(check.indexOf('CMD') + 3)) as string[])[2];
    const ready = words(services.order?.healthcheck?.test).slice(3).join(' ');
    const server = createServer((req, res) => {
      res.statusCode = req.url === '/health/live' ? 200 : 503;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = String((server.address() as AddressInfo).port);
    const exitOf = (script: string, OPS_PORT: string) =>
      new Promise<number | null>((resolve) => {
        execFile(process.execPath, ['-e', script], { env: { OPS_PORT } }, (err) =>
          resolve(err ? ((err as { code?: number }).code ?? null) : 0),
        );
      });
    try {
      expect(await exitOf(live, '0')).toBe(0);
      expect(await exitOf(ready, '0')).toBe(0);
      expect(await exitOf(live, port)).toBe(0);
      expect(await exitOf(ready, port)).toBe(1);
    } finally {
      server.close();
    }
    // Nothing listening.
    expect(await exitOf(live, port)).toBe(1);
  });
});

// ---------------------------------------------------------------- deploy/k8s

interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    readOnlyRootFilesystem?: boolean;
    allowPrivilegeEscalation?: boolean;
  };
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number;
    selector?: Record<string, unknown> & { matchLabels?: Record<string, string> };
    template?: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: {
        securityContext?: { runAsNonRoot?: boolean };
        topologySpreadConstraints?: Record<string, unknown>[];
        terminationGracePeriodSeconds?: number;
        containers: Container[];
      };
    };
    type?: string;
    maxUnavailable?: number | string;
    minAvailable?: number | string;
    ports?: { port: number; targetPort: string | number }[];
    scaleTargetRef?: { kind: string; name: string };
    metrics?: {
      type: string;
      resource?: { name: string; target: { averageUtilization?: number } };
    }[];
  };
}

interface NetworkPolicySpec {
  podSelector: { matchLabels?: Record<string, string> };
  policyTypes?: string[];
  ingress?: { from?: Record<string, unknown>[]; ports?: { port: string | number }[] }[];
}

function loadManifests(file: string): Manifest[] {
  return parseAllDocuments(readFileSync(join(K8S_DIR, file), 'utf8')).map((doc) => {
    expect(doc.errors).toEqual([]);
    return doc.toJS() as Manifest;
  });
}

const EXAMPLE_SECRET = 'secret.example.yaml';
const kustomization = parse(readFileSync(join(K8S_DIR, 'kustomization.yaml'), 'utf8')) as {
  resources: string[];
};
const manifests = kustomization.resources.flatMap(loadManifests);
const TOOLBOX = 'waybill-toolbox';
/** The services' Deployments; the toolbox's is the operator's console, which runs none. */
const deployments = manifests.filter((m) => m.kind === 'Deployment' && m.metadata.name !== TOOLBOX);
const toolbox = manifests.find((m) => m.kind === 'Deployment' && m.metadata.name === TOOLBOX);
const configMap = manifests.find((m) => m.kind === 'ConfigMap');
const exampleSecret = loadManifests(EXAMPLE_SECRET)[0];
/** The example Secret as an operator fills it in: live refuses its placeholders. */
const filledSecret = Object.fromEntries(
  Object.entries(exampleSecret.stringData ?? {}).map(([k, v]) => [
    k,
    v.replaceAll(EXAMPLE_PLACEHOLDER, 'operator-value'),
  ]),
);
/**
 * The ConfigMap as an operator fills it in: live refuses its example addresses. A value that
 * fits every one of them (a host's label, a Termii sender ID of 3 to 11 letters).
 */
const filledConfig: Record<string, string> = Object.fromEntries(
  Object.entries(configMap?.data ?? {}).map(([k, v]) => [
    k,
    v.replaceAll(EXAMPLE_PLACEHOLDER, 'operator'),
  ]),
);

/** Each `kubectl create secret generic ...` command in `text`, its continuation lines joined. */
function createSecretCommands(text: string): string[] {
  const lines = text.split('\n');
  const commands: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*kubectl create secret generic /.test(lines[i])) continue;
    let command = lines[i].trim();
    while (command.endsWith('\\') && i + 1 < lines.length) {
      command = `${command.slice(0, -1)} ${lines[++i].trim()}`.trimEnd();
    }
    commands.push(command);
  }
  return commands;
}

/** The keys a command sets with `--from-literal=KEY=...`. */
const literalKeys = (command: string) =>
  [...command.matchAll(/--from-literal=([A-Za-z0-9_]+)=/g)].map((m) => m[1]);

const containerOf = (d: Manifest) => d.spec?.template?.spec.containers[0] as Container;
const servicesOf = (d: Manifest) => containerOf(d).env?.find((e) => e.name === 'SERVICES')?.value;
/** The Secret's keys a container is given one by one: `[key, optional]`. */
const secretKeysOf = (container: Container) =>
  (container.env ?? []).flatMap(({ valueFrom }) => {
    const ref = valueFrom?.secretKeyRef;
    return ref ? [[ref.key, ref.optional === true] as const] : [];
  });
/**
 * The environment a Deployment's process reads: the ConfigMap, its own values and the keys of
 * the Secret it is given (the filled Secret holds no NATS_URL: the ConfigMap's stands).
 */
function deployedEnv(d: Manifest): Record<string, string | undefined> {
  const container = containerOf(d);
  const own = (container.env ?? []).filter((e) => e.value !== undefined);
  const keys = secretKeysOf(container).map(([key]) => key);
  return {
    ...filledConfig,
    ...Object.fromEntries(own.map((e) => [e.name, e.value])),
    ...Object.fromEntries(keys.filter((k) => k in filledSecret).map((k) => [k, filledSecret[k]])),
  };
}
const isSubset = (sub: Record<string, string> = {}, of: Record<string, string> = {}) =>
  Object.keys(sub).length > 0 && Object.entries(sub).every(([k, v]) => of[k] === v);

describe('deploy/k8s', () => {
  it('lists every manifest in kustomization.yaml except itself and the example secret', () => {
    const files = readdirSync(K8S_DIR)
      .filter((f) => /\.ya?ml$/.test(f))
      .filter((f) => f !== 'kustomization.yaml' && f !== EXAMPLE_SECRET);
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    expect(kustomization.resources).not.toContain(EXAMPLE_SECRET);
  });

  it('has exactly one Deployment per SERVICE_NAMES entry', () => {
    expect(deployments.map(servicesOf).sort()).toEqual([...SERVICE_NAMES].sort());
  });

  it.each(SERVICE_NAMES)('runs %s with probes, metrics annotations and limits', (name) => {
    const deployment = deployments.find((d) => servicesOf(d) === name) as Manifest;
    const template = deployment.spec?.template;
    const container = containerOf(deployment);
    expect(container.image).toBe('waybill:latest');
    expect(isSubset(deployment.spec?.selector?.matchLabels, template?.metadata.labels)).toBe(true);

    const ops = container.ports?.find((p) => p.name === 'ops');
    expect(ops?.containerPort).toBe(OPS_PORT);
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/health/live', port: 'ops' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/health/ready', port: 'ops' });

    expect(template?.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': String(OPS_PORT),
      'prometheus.io/path': '/metrics',
    });
    for (const kind of ['requests', 'limits'] as const) {
      expect(container.resources?.[kind]).toMatchObject({
        cpu: expect.any(String),
        memory: expect.any(String),
      });
    }
  });

  /**
   * The most RSS recorded for each process under `npm run bench:soak` with the V8 heap its pod
   * states (decision 87; docs/performance.md, "Memory over time"): runs Y (10 minutes), Z (40
   * minutes, through the rollout backfill's pass) and AA (10 minutes at 50 connections).
   * Earlier runs measured V8 sized for the development machine, not the pods. Each pod
   * requests what `requestFor` gives for its figure, 10 % above it, since the soak's is one
   * load among many (decision 88): a pod that requests less is scheduled where its memory may
   * not be; one whose limit is this close is killed at the next burst. A soak that measures
   * more raises these.
   */
  const MEASURED_HIGHEST_MB: Record<ServiceName, number> = {
    gateway: 277,
    account: 138,
    geo: 173,
    pricing: 149,
    package: 174,
    payment: 158,
    order: 192,
    'courier-matching': 180,
    file: 163,
    webhook: 185,
  };

  it.each(SERVICE_NAMES)('sizes the memory of %s by what the soak measured', (name) => {
    const { request, limit } = deployedMemoryMb(name);
    const measured = MEASURED_HIGHEST_MB[name];
    // No less and no more; the file service requests its upload slots, above that.
    if (name === 'file') expect(request).toBeGreaterThanOrEqual(requestFor(measured));
    else expect(request).toBe(requestFor(measured));
    // Nothing to say: within the request, and under NEAR_LIMIT of the limit.
    expect(memoryFit({ atRestMb: measured, highestMb: measured }, { request, limit })).toBe('');
  });

  it.each(SERVICE_NAMES)(
    'lets a drain take one pod of %s at a time, and spreads its pods over nodes',
    (name) => {
      const deployment = deployments.find((d) => servicesOf(d) === name) as Manifest;
      const own = deployment.spec?.selector?.matchLabels;
      const budgets = manifests.filter(
        (m) =>
          m.kind === 'PodDisruptionBudget' &&
          isSubset(m.spec?.selector?.matchLabels, deployment.spec?.template?.metadata.labels),
      );
      expect(budgets).toHaveLength(1);
      expect(budgets[0].apiVersion).toBe('policy/v1');
      expect(budgets[0].spec).toMatchObject({ maxUnavailable: 1 });
      expect(budgets[0].spec?.minAvailable).toBeUndefined();
      // This Deployment's pods and no other's: a budget over two services counts them together.
      expect(budgets[0].spec?.selector?.matchLabels).toEqual(own);
      expect(deployment.spec?.template?.spec.topologySpreadConstraints).toContainEqual({
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        // Soft: a cluster of one node still runs every replica.
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: own },
      });
    },
  );

  it.each(SERVICE_NAMES)('runs %s as non-root on a read-only filesystem', (name) => {
    const deployment = deployments.find((d) => servicesOf(d) === name) as Manifest;
    const container = containerOf(deployment);
    expect(deployment.spec?.template?.spec.securityContext?.runAsNonRoot).toBe(true);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
  });

  it.each(SERVICE_NAMES)(
    'configures %s from the ConfigMap and the keys of the Secret it reads, no other',
    (name) => {
      const deployment = deployments.find((d) => servicesOf(d) === name) as Manifest;
      const container = containerOf(deployment);
      expect(container.envFrom).toEqual([{ configMapRef: { name: configMap?.metadata.name } }]);
      for (const { valueFrom } of container.env ?? []) {
        const ref = valueFrom?.secretKeyRef;
        if (ref) expect(ref.name).toBe(exampleSecret.metadata.name);
      }
      // Optional, as the whole Secret's keys were: a staging copy's Secret may leave out what
      // staging defaults, and live refuses to start without one it needs, naming it (below).
      // But the servers' URLs: without one a pod would wait on a local server for ever.
      const required = ['MONGO_URL', 'REDIS_URL'];
      expect(secretKeysOf(container)).toEqual(
        [...secretsOf([name]), 'NATS_URL'].map((key) => [key, !required.includes(key)]),
      );
      // Live, with only these, it starts.
      expect(loadConfig(deployedEnv(deployment)).services).toEqual([name]);
      const unknown = (container.env ?? [])
        .map((e) => e.name)
        .filter((n) => !CONFIG_VARIABLES.has(n));
      expect(unknown).toEqual([]);
    },
  );

  it("gives the operator's console, which runs no service, the whole Secret for the CLI", () => {
    const container = containerOf(toolbox as Manifest);
    expect(container.image).toBe('waybill:latest');
    expect(container.command).toEqual(['sleep', 'infinity']);
    expect(container.ports).toBeUndefined();
    expect(container.env?.map((e) => e.name)).not.toContain('SERVICES');
    expect(container.envFrom).toEqual([
      { configMapRef: { name: configMap?.metadata.name } },
      { secretRef: { name: exampleSecret.metadata.name } },
    ]);
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    // A command runs any services live, with the filled Secret.
    expect(loadConfig({ ...filledConfig, ...filledSecret }).services).toEqual([...SERVICE_NAMES]);
    // deploy/README.md sends CLI commands there, not to a service's pod.
    const readme = read('deploy/README.md');
    expect(readme).toContain('exec deploy/waybill-toolbox -- node dist/bin/waybill.js');
    expect(readme).not.toMatch(/kubectl .*exec deploy\/waybill-(?!toolbox)/);
  });

  it('keeps only known variables in the ConfigMap and Secret, with every connection URL', () => {
    const keys = [
      ...Object.keys(configMap?.data ?? {}),
      ...Object.keys(exampleSecret.stringData ?? {}),
    ];
    expect(keys.filter((k) => !CONFIG_VARIABLES.has(k))).toEqual([]);
    expect(keys).toEqual(
      expect.arrayContaining(['NATS_URL', 'MONGO_URL', 'REDIS_URL', 'S3_ENDPOINT', 'ADMIN_TOKEN']),
    );
    expect(keys).not.toContain('SERVICES'); // set per Deployment
    expect(Object.values(configMap?.data ?? {}).every((v) => typeof v === 'string')).toBe(true);
  });

  it('sets no variable meant for tests only, in the ConfigMap, the Secret or a Deployment', () => {
    const keys = [
      ...Object.keys(configMap?.data ?? {}),
      ...Object.keys(exampleSecret.stringData ?? {}),
      ...deployments.flatMap((d) => (containerOf(d).env ?? []).map((e) => e.name)),
    ];
    expect(keys.filter((k) => TEST_ONLY_VARIABLES.includes(k))).toEqual([]);
  });

  it('marks the Secret as an example with placeholder values, which live refuses', () => {
    expect(exampleSecret.kind).toBe('Secret');
    expect(readFileSync(join(K8S_DIR, EXAMPLE_SECRET), 'utf8')).toMatch(/EXAMPLE ONLY/);
    for (const value of Object.values(exampleSecret.stringData ?? {})) {
      expect(value).toContain(EXAMPLE_PLACEHOLDER);
    }
    // Applied as it is, or with one value left as it is, live does not start.
    for (const name of Object.keys(filledSecret)) {
      const env = {
        ...filledConfig,
        ...filledSecret,
        [name]: exampleSecret.stringData?.[name],
      };
      expect(() => loadConfig(env)).toThrow(new RegExp(`^${name}: still holds the example's`));
    }
  });

  it('leaves the operator’s own addresses (links to people, files, mail) to replace, which live refuses as they are', () => {
    const examples = Object.entries(configMap?.data ?? {}).filter(([, v]) =>
      v.includes(EXAMPLE_PLACEHOLDER),
    );
    expect(examples.map(([k]) => k).sort()).toEqual(
      ['CDN_BASE_URL', 'MAIL_FROM', 'PUBLIC_BASE_URL', 'S3_ENDPOINT', 'TERMII_SENDER_ID'].sort(),
    );
    for (const [name, value] of examples) {
      const env = { ...filledConfig, ...filledSecret, [name]: value };
      expect(() => loadConfig(env)).toThrow(new RegExp(`^${name}: still holds the example's`));
    }
  });

  // A key the command leaves out crash-loops every pod ("invalid configuration: ...").
  it('creates in deploy/README.md a Secret with every key live needs beside the ConfigMap', () => {
    const commands = createSecretCommands(read('deploy/README.md'));
    expect(commands).toHaveLength(1);
    expect(commands[0]).toMatch(
      new RegExp(`^kubectl create secret generic ${exampleSecret.metadata.name} `),
    );
    const keys = literalKeys(commands[0]);
    // The example's values have the shapes the config checks; the command's are elided.
    const examples = filledSecret;
    expect(keys.filter((k) => !(k in examples))).toEqual([]);
    const env = { ...filledConfig, ...Object.fromEntries(keys.map((k) => [k, examples[k]])) };
    expect(() => loadConfig(env)).not.toThrow();
    // Every key a pod is given, but NATS's (in the Secret only when NATS takes credentials).
    const given = deployments
      .flatMap((d) => secretKeysOf(containerOf(d)).map(([key]) => key))
      .filter((key) => key !== 'NATS_URL');
    expect(given.filter((key) => !keys.includes(key))).toEqual([]);
    expect(Object.keys(exampleSecret.stringData ?? {})).toEqual(expect.arrayContaining(given));
  });

  it('names in deploy/README.md every variable live makes mandatory', () => {
    const env: Record<string, string> = { ...filledConfig, ...filledSecret };
    expect(() => loadConfig(env)).not.toThrow();
    // Mandatory: without it, live with these manifests refuses to start.
    const mandatory = Object.keys(env).filter((name) => {
      try {
        loadConfig(Object.fromEntries(Object.entries(env).filter(([k]) => k !== name)));
        return false;
      } catch {
        return true;
      }
    });
    expect(mandatory).toEqual(expect.arrayContaining(['ADMIN_TOKEN', 'SMTP_URL']));
    const paragraph =
      read('deploy/README.md')
        .split(/\n\s*\n/)
        .find((p) => p.startsWith('`APP_ENV` is `live`')) ?? '';
    const named = [...paragraph.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]);
    expect(mandatory.filter((name) => !named.includes(name))).toEqual([]);
  });

  it('exposes the gateway through a Service on port 80 to its http port 3000', () => {
    const gateway = deployments.find((d) => servicesOf(d) === 'gateway') as Manifest;
    const http = containerOf(gateway).ports?.find((p) => p.name === 'http');
    expect(http?.containerPort).toBe(HTTP_PORT);
    const service = manifests.find(
      (m) =>
        m.kind === 'Service' &&
        isSubset(
          m.spec?.selector as Record<string, string>,
          gateway.spec?.template?.metadata.labels,
        ),
    );
    expect(service?.spec?.ports).toContainEqual(
      expect.objectContaining({ port: 80, targetPort: 'http' }),
    );
  });

  it('trusts one proxy, the ingress in front of the ClusterIP gateway Service', () => {
    // With 0, every client is the ingress pod: one failed-authentication count and one
    // tracking-stream cap for all of them.
    const gateway = manifests.find(
      (m) => m.kind === 'Service' && m.metadata.name === 'waybill-gateway',
    );
    expect(gateway?.spec?.type).toBe('ClusterIP');
    expect(configMap?.data?.TRUST_PROXY_HOPS).toBe('1');
    expect(loadConfig({ ...filledConfig, ...filledSecret }).trustProxyHops).toBe(1);
  });

  it("documents a NetworkPolicy that admits only the ingress to the gateway's API port", () => {
    // Trusting X-Forwarded-For, the gateway must not be reachable around the ingress.
    const blocks = [...read('deploy/README.md').matchAll(/```yaml\n([\s\S]*?)```/g)].map(
      (m) => parse(m[1]) as Manifest & { spec: NetworkPolicySpec },
    );
    const policy = blocks.find((b) => b.kind === 'NetworkPolicy');
    const gateway = deployments.find((d) => servicesOf(d) === 'gateway') as Manifest;
    const ports = containerOf(gateway).ports ?? [];
    expect(policy?.apiVersion).toBe('networking.k8s.io/v1');
    expect(policy?.spec.podSelector.matchLabels).toEqual(gateway.spec?.selector?.matchLabels);
    expect(policy?.spec.policyTypes).toContain('Ingress');
    const rules = policy?.spec.ingress ?? [];
    const opening = (port: string) => rules.filter((r) => r.ports?.some((p) => p.port === port));
    expect(ports.map((p) => p.name)).toEqual(expect.arrayContaining(['http', 'ops']));
    // The API from one namespace, the controller's; the ops port for probes and scrapes.
    expect(opening('http')).toEqual([
      {
        from: [
          {
            namespaceSelector: {
              matchLabels: { 'kubernetes.io/metadata.name': expect.any(String) },
            },
          },
        ],
        ports: [{ port: 'http' }],
      },
    ]);
    expect(opening('ops')).toEqual([{ ports: [{ port: 'ops' }] }]);
    expect(rules.filter((r) => !r.ports)).toEqual([]);
  });

  it('gives the file service the memory its upload cap needs (docs/files.md)', () => {
    const file = deployments.find((d) => servicesOf(d) === 'file') as Manifest;
    const { maxUploads } = loadConfig(deployedEnv(file)).files;
    const { request, limit } = deployedMemoryMb('file');
    const boundMb = fileProcessMemoryBound(maxUploads) / 2 ** 20;
    expect(maxUploads).toBeGreaterThan(0);
    // Every slot taken is the file service's normal work: requested, and clear of the limit.
    expect(request).toBeGreaterThanOrEqual(boundMb);
    expect(memoryFit({ atRestMb: boundMb, highestMb: boundMb }, { request, limit })).toBe('');
  });

  it.each(SERVICE_NAMES)(
    'runs %s with the same NODE_OPTIONS as docker-compose.yml and the benchmarks',
    (name) => {
      const container = containerOf(deployments.find((d) => servicesOf(d) === name) as Manifest);
      const own = container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value ?? '';
      expect(envOf(services[name]).NODE_OPTIONS ?? '').toBe(own);
      expect(deployedNodeOptions(name)).toBe(own);
    },
  );

  it('bounds the young generation of the services that allocate steadily, which V8 grows to 128 MB (docs/performance.md)', () => {
    // Objects that live a little while, at a steady rate: V8 grows the young generation as
    // many of them survive a scavenge, up to twice --max-semi-space-size (64 MB here by default).
    const allocate = `
      let kept = [];
      for (let i = 0; i < 3e7; i++) {
        const o = { i, pair: [i, i + 1] };
        if (i % 50 === 0) kept.push(o);
        if (kept.length > 20000) kept = [];
      }
      const young = require('v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      console.log(young.space_size / 2 ** 20);`;
    const youngMb = (nodeOptions: string) => numberPrintedByNode(allocate, nodeOptions);
    // The load grows an unbounded process past the bound: the check below means something.
    expect(youngMb('')).toBeGreaterThan(32);
    for (const name of ['courier-matching', 'package', 'order', 'webhook', 'file'] as const) {
      expect(youngMb(deployedNodeOptions(name))).toBeLessThanOrEqual(32);
    }
  });

  it.each(SERVICE_NAMES)(
    "states %s's V8 heap, which Node would otherwise size from the pod's memory limit (decision 87)",
    (name) => {
      const nodeOptions = deployedNodeOptions(name);
      const flag = (option: string) =>
        Number(new RegExp(`(?:^| )--${option}=(\\d+)(?: |$)`).exec(nodeOptions)?.[1]);
      const semiSpaceMb = flag('max-semi-space-size');
      const oldSpaceMb = flag('max-old-space-size');
      // In a 512 Mi pod's 256 MB V8 lets its heap grow to 1.3× what a collection kept, at 1,024
      // MB about 1.6×: measured in pods, a Mode B quote cost 251–258 CPU µs against 219–227.
      expect(oldSpaceMb).toBe(1024);
      // A 512 Mi pod alone would give some 10 MB of young space; geo's is small on purpose.
      expect(semiSpaceMb).toBeGreaterThanOrEqual(name === 'geo' ? 4 : 16);
      // The pod's limit holds the young generation (two semi-spaces) with room to spare.
      const { limit } = deployedMemoryMb(name);
      expect(2 * semiSpaceMb).toBeLessThanOrEqual((limit ?? 0) / 4);
      // Node takes the options: V8's heap limit is the old space and the young generation.
      expect(numberPrintedByNode(PRINT_HEAP_LIMIT_MB, nodeOptions)).toBeGreaterThanOrEqual(
        oldSpaceMb + 2 * semiSpaceMb,
      );
    },
  );

  it('declares the file service transfer port, and no Service exposes it', () => {
    const file = deployments.find((d) => servicesOf(d) === 'file') as Manifest;
    const container = containerOf(file);
    const port = Number(container.env?.find((e) => e.name === 'FILE_TRANSFER_PORT')?.value);
    expect(port).toBeGreaterThan(0);
    expect(container.ports?.find((p) => p.name === 'transfer')?.containerPort).toBe(port);
    for (const service of manifests.filter((m) => m.kind === 'Service')) {
      for (const p of service.spec?.ports ?? []) {
        expect([p.port, p.targetPort]).not.toContain(port);
        expect(p.targetPort).not.toBe('transfer');
      }
    }
  });

  it.each(SERVICE_NAMES)(
    'lets %s stop within its grace period: the preStop hook, then STOP_GRACE_MS',
    (name) => {
      const deployment = deployments.find((d) => servicesOf(d) === name) as Manifest;
      const preStop = containerOf(deployment).lifecycle?.preStop;
      // Only a sleep has a length known here; another hook needs this test taught its length.
      const command = preStop?.exec?.command;
      if (command) expect(command[0]).toBe('sleep');
      const preStopSeconds = command ? Number(command[1]) : (preStop?.sleep?.seconds ?? 0);
      expect(Number.isFinite(preStopSeconds)).toBe(true);
      const preStopMs = 1000 * preStopSeconds;
      // Kubernetes' default when the pod does not say.
      const graceMs = 1000 * (deployment.spec?.template?.spec.terminationGracePeriodSeconds ?? 30);
      const { stopGraceMs, requestTimeoutMs } = loadConfig(deployedEnv(deployment));
      // The process gives up and exits 1 at STOP_GRACE_MS, before the kubelet kills it (137).
      expect(preStopMs + stopGraceMs + EXIT_MARGIN_MS).toBeLessThanOrEqual(graceMs);
      // A request in progress as the stop begins has its whole time to finish.
      expect(stopGraceMs).toBeGreaterThan(requestTimeoutMs);
    },
  );

  it('autoscales the gateway on 70% CPU, leaving its replica count to the autoscaler', () => {
    const gateway = deployments.find((d) => servicesOf(d) === 'gateway') as Manifest;
    const hpa = manifests.find((m) => m.kind === 'HorizontalPodAutoscaler');
    expect(hpa?.spec?.scaleTargetRef).toMatchObject({
      kind: 'Deployment',
      name: gateway.metadata.name,
    });
    expect(hpa?.spec?.metrics).toContainEqual(
      expect.objectContaining({
        type: 'Resource',
        resource: { name: 'cpu', target: expect.objectContaining({ averageUtilization: 70 }) },
      }),
    );
    expect(gateway.spec?.replicas).toBeUndefined();
  });
});

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `scripts/infra` against a temporary WAYBILL_LOCAL holding hand-written pid files: no server
 * is started or stopped, only processes these tests spawn themselves.
 */
const INFRA = join(__dirname, '..', '..', '..', 'scripts', 'infra');
const onLinux = existsSync('/proc/self/stat');

let local: string;
let run: string;
let ports: Record<string, string>;
const spawned: ChildProcess[] = [];

/** A port nothing listens on (it was free a moment ago), so that status finds it closed. */
function closedPort(): Promise<string> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(String(port)));
    });
  });
}

beforeAll(async () => {
  ports = {
    WAYBILL_MONGO_PORT: await closedPort(),
    WAYBILL_NATS_PORT: await closedPort(),
    WAYBILL_REDIS_PORT: await closedPort(),
    WAYBILL_S3_PORT: await closedPort(),
    WAYBILL_PG_PORT: await closedPort(),
  };
});

beforeEach(() => {
  local = mkdtempSync(join(tmpdir(), 'waybill-infra-'));
  run = join(local, 'run');
  mkdirSync(run, { recursive: true });
});

afterEach(() => {
  for (const child of spawned.splice(0)) child.kill('SIGKILL');
  rmSync(local, { recursive: true, force: true });
});

/** Runs the script without blocking the event loop, so that killed children are reaped. */
function infra(...args: string[]): Promise<{ code: number; output: string }> {
  return infraWith({}, ...args);
}

function infraWith(
  env: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'bash',
      [INFRA, ...args],
      {
        env: {
          ...process.env,
          ...ports,
          WAYBILL_LOCAL: local,
          WAYBILL_CACHE: join(local, 'cache'),
          ...env,
        },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, output: stdout + stderr });
      },
    );
  });
}

/** A process that is not a server of ours: `sleep 60`. */
async function bystander(): Promise<ChildProcess> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  spawned.push(child);
  await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject));
  return child;
}

const alive = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

async function exited(child: ChildProcess): Promise<NodeJS.Signals | number | null> {
  if (!alive(child)) return child.signalCode ?? child.exitCode;
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
}

/** Field 22 of /proc/<pid>/stat: when the process started, as infra records it. */
function startTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** A pid file as `infra up` writes it, optionally with the command and start time. */
function pidFile(name: string, pid: number, record: { cmd?: string[]; start?: string } = {}) {
  writeFileSync(join(run, `${name}.pid`), `${pid}\n`);
  if (record.cmd) writeFileSync(join(run, `${name}.cmd`), `${record.cmd.join('\n')}\n`);
  if (record.start) writeFileSync(join(run, `${name}.start`), `${record.start}\n`);
}

const recorded = (name: string) =>
  ['pid', 'cmd', 'start'].filter((ext) => existsSync(join(run, `${name}.${ext}`)));

describe('scripts/infra down', () => {
  it('leaves alone a process that a stale pid file names, and removes the pid file', async () => {
    const other = await bystander();
    pidFile('nats', other.pid as number);
    pidFile('s3', other.pid as number);

    const { code, output } = await infra('down');
    await new Promise((r) => setTimeout(r, 50)); // time for an exit event, had it been killed
    expect(alive(other)).toBe(true);
    expect(code).toBe(0);
    expect(recorded('nats')).toEqual([]);
    expect(recorded('s3')).toEqual([]);
    expect(output).toMatch(/nats: its pid file names no process started here/);
  });

  (onLinux ? it : it.skip)(
    'leaves alone a process running the recorded program that started at another time (a reused pid)',
    async () => {
      const other = await bystander();
      const start = String(Number(startTime(other.pid as number)) + 1);
      pidFile('redis', other.pid as number, { cmd: ['sleep', '60'], start });

      const { code } = await infra('down', 'redis');
      await new Promise((r) => setTimeout(r, 50));
      expect(alive(other)).toBe(true);
      expect(code).toBe(0);
      expect(recorded('redis')).toEqual([]);
    },
  );

  it('stops the servers it is told to, and only those, when they are what was started', async () => {
    const [nats, redis] = [await bystander(), await bystander()];
    for (const [name, child] of [
      ['nats', nats],
      ['redis', redis],
    ] as const) {
      const pid = child.pid as number;
      pidFile(name, pid, { cmd: ['sleep', '60'], start: onLinux ? startTime(pid) : undefined });
    }

    const named = await infra('down', 'nats');
    expect(named.code).toBe(0);
    expect(named.output).toMatch(/stopped nats/);
    expect(await exited(nats)).toBe('SIGTERM');
    expect(recorded('nats')).toEqual([]);
    expect(alive(redis)).toBe(true);
    expect(recorded('redis')).toEqual(onLinux ? ['pid', 'cmd', 'start'] : ['pid', 'cmd']);

    expect((await infra('down')).code).toBe(0);
    expect(await exited(redis)).toBe('SIGTERM');
    expect(recorded('redis')).toEqual([]);
  });

  it('refuses a name it does not know, touching nothing', async () => {
    const other = await bystander();
    pidFile('nats', other.pid as number, { cmd: ['sleep', '60'] });
    const { code, output } = await infra('down', 'nats', 'postgres');
    expect(code).not.toBe(0);
    expect(output).toMatch(/unknown server 'postgres'/);
    expect(recorded('nats')).toEqual(['pid', 'cmd']);
    expect(alive(other)).toBe(true);
  });
});

describe('scripts/infra up', () => {
  it('refuses a name it does not know, starting nothing', async () => {
    const { code, output } = await infra('up', 'nats', 'postgres');
    expect(code).not.toBe(0);
    expect(output).toMatch(/unknown server 'postgres'/);
    expect(recorded('nats')).toEqual([]);
  });
});

describe('scripts/infra status', () => {
  it('does not take a process that a stale pid file names for the server on the port', async () => {
    const other = await bystander();
    pidFile('nats', other.pid as number);
    const listener = createServer();
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const { port } = listener.address() as { port: number };
    try {
      const { code, output } = await infraWith({ WAYBILL_NATS_PORT: String(port) }, 'status');
      expect(output).toMatch(
        new RegExp(`^nats +port ${port} is open but not started by this script$`, 'm'),
      );
      expect(output).not.toMatch(/running/);
      expect(code).toBe(1); // the others are stopped
    } finally {
      listener.close();
    }
  });
});

describe('scripts/infra --help', () => {
  it('describes every command and the overrides', async () => {
    const { code, output } = await infra('--help');
    expect(code).toBe(0);
    for (const usage of ['up [NAME...]', 'down [NAME...]', 'status', 'env', 'reset']) {
      expect(output).toContain(`scripts/infra ${usage} `);
    }
    for (const variable of [
      'WAYBILL_LOCAL',
      'WAYBILL_INFRA_STARTED',
      'WAYBILL_NATS_PORT',
      'WAYBILL_FERRETDB',
      'WAYBILL_PG_PORT',
    ]) {
      expect(output).toContain(variable);
    }
    expect(output).not.toMatch(/set -euo|^#/m);
  });
});

describe('scripts/infra and FerretDB’s storage', () => {
  it('refuses a backend it does not know, saying which it knows', async () => {
    const { code, output } = await infraWith({ WAYBILL_FERRETDB: 'mysql' }, 'status');
    expect(code).not.toBe(0);
    expect(output).toMatch(/WAYBILL_FERRETDB must be postgresql or sqlite, not 'mysql'/);
  });

  it('reports no PostgreSQL on SQLite, and one to run on PostgreSQL', async () => {
    const sqlite = await infraWith({ WAYBILL_FERRETDB: 'sqlite' }, 'status', 'pg');
    expect(sqlite.output).toMatch(/^pg +not used \(FerretDB on sqlite\)$/m);
    expect(sqlite.code).toBe(0);
    const postgres = await infraWith({ WAYBILL_FERRETDB: 'postgresql' }, 'status', 'pg');
    expect(postgres.output).toMatch(/^pg +stopped$/m);
    expect(postgres.code).toBe(1);
  });

  it('stops the PostgreSQL it started, by name or with everything', async () => {
    const pg = await bystander();
    const pid = pg.pid as number;
    pidFile('pg', pid, { cmd: ['sleep', '60'], start: onLinux ? startTime(pid) : undefined });
    const { code, output } = await infra('down');
    expect(code).toBe(0);
    expect(output).toMatch(/stopped pg/);
    expect(await exited(pg)).toBe('SIGTERM');
    expect(recorded('pg')).toEqual([]);
  });
});

import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './stack';

const INFRA = join(__dirname, '..', '..', 'scripts', 'infra');

export type ServerName = 'mongo' | 'nats' | 'redis';

/**
 * A MongoDB-compatible server (with its PostgreSQL, when FerretDB stores there), NATS and Redis
 * of a test's own, started by `scripts/infra` on free ports with their data in a temporary
 * folder: a test may stop and restart them while the other test files go on with the shared
 * ones.
 */
export interface PrivateInfra {
  /** MONGO_URL, NATS_URL and REDIS_URL of these servers, for `startNode`'s `env`. */
  env: Record<string, string>;
  down(name: ServerName): Promise<void>;
  up(name: ServerName): Promise<void>;
  /** Stops them all and deletes their data. */
  remove(): Promise<void>;
}

export async function startPrivateInfra(): Promise<PrivateInfra> {
  const local = mkdtempSync(join(tmpdir(), 'waybill-private-infra-'));
  // PostgreSQL runs as its own user when the tests run as root: it must reach its folder.
  chmodSync(local, 0o755);
  const ports = {
    WAYBILL_PG_PORT: String(await freePort()),
    WAYBILL_MONGO_PORT: String(await freePort()),
    WAYBILL_NATS_PORT: String(await freePort()),
    WAYBILL_REDIS_PORT: String(await freePort()),
  };
  // WAYBILL_INFRA_STARTED (set by scripts/test) lists what the whole run stops at its end:
  // these servers are not the run's.
  const scriptEnv: NodeJS.ProcessEnv = { ...process.env, ...ports, WAYBILL_LOCAL: local };
  delete scriptEnv.WAYBILL_INFRA_STARTED;
  const infra = (...args: string[]) =>
    new Promise<void>((resolve, reject) =>
      execFile('bash', [INFRA, ...args], { env: scriptEnv, timeout: 60_000 }, (error, out, err) =>
        error ? reject(new Error(`scripts/infra ${args.join(' ')}: ${out}${err}`)) : resolve(),
      ),
    );
  const servers: ServerName[] = ['mongo', 'nats', 'redis'];
  await infra('up', ...servers);
  return {
    env: {
      MONGO_URL: `mongodb://127.0.0.1:${ports.WAYBILL_MONGO_PORT}`,
      NATS_URL: `nats://127.0.0.1:${ports.WAYBILL_NATS_PORT}`,
      REDIS_URL: `redis://127.0.0.1:${ports.WAYBILL_REDIS_PORT}`,
    },
    down: (name) => infra('down', name),
    up: (name) => infra('up', name),
    async remove() {
      await infra('down'); // all, PostgreSQL included
      rmSync(local, { recursive: true, force: true });
    },
  };
}

import { execFile } from 'node:child_process';
import { join } from 'node:path';

/** The repository's root: where a script run by a test starts. */
export const ROOT = join(__dirname, '..', '..');

/**
 * An environment for the CLI whose servers do not answer (port 9, discard), each try at
 * MongoDB cut short: a command that reaches for one by mistake fails fast instead of using a
 * real one.
 */
export const NO_SERVERS: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  NODE_ENV: 'test',
  MONGO_URL: 'mongodb://127.0.0.1:9',
  MONGO_TIMEOUT_MS: '500',
  REDIS_URL: 'redis://127.0.0.1:9',
  LOG_LEVEL: 'fatal',
};

export interface NodeRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `file` with `args` from the repository's root and resolves with how it ended (it never
 * rejects); `stdin` is written and closed. `env` replaces this process's environment when given.
 */
export function runCommand(
  file: string,
  args: string[],
  { stdin, env }: { stdin?: Buffer; env?: NodeJS.ProcessEnv } = {},
): Promise<NodeRun> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { cwd: ROOT, encoding: 'utf8', ...(env ? { env } : {}) },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout, stderr }),
    );
    child.stdin?.end(stdin);
  });
}

/**
 * Runs a TypeScript entry in a Node process of its own, through tsx as the tests run ours,
 * with `nodeFlags` before it and `args` after; `stdin` is written and closed. `env` replaces
 * this process's environment when given.
 */
export function runTypeScript(
  entry: string,
  args: string[] = [],
  {
    nodeFlags = [],
    stdin,
    env,
  }: { nodeFlags?: string[]; stdin?: Buffer; env?: NodeJS.ProcessEnv } = {},
): Promise<NodeRun> {
  return runCommand(process.execPath, [...nodeFlags, '--import', 'tsx', entry, ...args], {
    stdin,
    env,
  });
}

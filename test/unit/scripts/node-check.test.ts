import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engines } from '../../../package.json';

/**
 * scripts/lib/node.sh's check of a Node against package.json's engines, with node binaries
 * that only print what they are told to, run as the project's scripts run (`set -euo
 * pipefail`): `ensure_node` keeps a Node that passes and fetches the pinned one (.nvmrc)
 * otherwise, a Node 22 before 22.12 included, which it once kept for its major version alone.
 */
const NODE_SH = join(__dirname, '..', '..', '..', 'scripts', 'lib', 'node.sh');
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-node-check-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A "node" that prints `output` (to `-p process.versions.node`), or fails without it. */
function fakeNode(output: string | undefined): string {
  const path = join(dir, `node-${Math.random().toString(36).slice(2)}`);
  const body = output === undefined ? 'exit 127' : `printf '%s\\n' '${output}'`;
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

function run(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const strict = `set -euo pipefail; source "${NODE_SH}"; ${script}`;
    execFile('bash', ['-c', strict], (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

const supported = (output: string | undefined) =>
  run(`if node_supported "${fakeNode(output)}"; then echo yes; else echo no; fi`);

test('the minimum is the bound of package.json engines', async () => {
  expect(await run('node_minimum')).toBe(engines.node.replace(/^>=\s*/, ''));
  expect(engines.node).toBe('>=22.12');
});

test.each([
  ['22.12.0', 'yes'],
  ['22.12.1', 'yes'],
  ['22.13.0', 'yes'],
  ['23.0.0', 'yes'],
  ['24.21.0', 'yes'],
  ['100.0.0', 'yes'],
  ['22.11.9', 'no'],
  ['22.2.0', 'no'],
  ['21.7.3', 'no'],
  ['20.19.5', 'no'],
  ['9.99.99', 'no'],
])('Node %s is accepted: %s', async (version, expected) => {
  expect(await supported(version)).toBe(expected);
});

test('a node that does not start, or does not print a version, is not accepted', async () => {
  expect(await supported(undefined)).toBe('no');
  expect(await supported('undefined')).toBe('no');
  expect(await supported('')).toBe('no');
  expect(await supported('v24.21.0')).toBe('no');
});

test('a warning printed before the version does not decide', async () => {
  expect(await supported('(node:1) Warning: something\n24.21.0')).toBe('yes');
  expect(await supported('(node:1) Warning: something\n20.19.5')).toBe('no');
});

test('the pinned Node (.nvmrc) is one the engines accept', async () => {
  const pinned = readFileSync(join(__dirname, '..', '..', '..', '.nvmrc'), 'utf8').trim();
  expect(await supported(pinned)).toBe('yes');
});

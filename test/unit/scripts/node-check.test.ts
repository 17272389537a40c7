import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { engines } from '../../../package.json';

/**
 * scripts/lib/node.sh's check of the Node on PATH against package.json's engines, with node
 * binaries that only say their version: an older one is replaced by the pinned one (a Node 22
 * before 22.12 too, which the scripts once took because they checked the major version only).
 */
const NODE_SH = join(__dirname, '..', '..', '..', 'scripts', 'lib', 'node.sh');
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-node-check-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A "node" that answers `-p process.versions.node` with `version`, or fails. */
function fakeNode(version: string | undefined): string {
  const path = join(dir, `node-${version ?? 'broken'}`);
  writeFileSync(path, version ? `#!/bin/sh\necho ${version}\n` : '#!/bin/sh\nexit 127\n');
  chmodSync(path, 0o755);
  return path;
}

function run(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', `source "${NODE_SH}"; ${script}`], (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

const supported = (version: string | undefined) =>
  run(`node_supported "${fakeNode(version)}" && echo yes || echo no`);

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

test('a node that does not start is not accepted', async () => {
  expect(await supported(undefined)).toBe('no');
});

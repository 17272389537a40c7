import { execFile } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * `scripts/test` in a copy of the checkout's scripts, with `scripts/infra` and `npx` replaced by
 * stubs that log their calls: which servers it stops, and when, without starting any.
 */
const ROOT = join(__dirname, '..', '..', '..');
let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'waybill-test-script-'));
  mkdirSync(join(root, 'scripts', 'lib'), { recursive: true });
  mkdirSync(join(root, 'node_modules'));
  mkdirSync(join(root, 'bin'));
  for (const file of [
    'scripts/test',
    'scripts/lib/node.sh',
    '.nvmrc',
    'package.json',
    'package-lock.json',
  ]) {
    copyFileSync(join(ROOT, file), join(root, file));
  }
  // node_modules up to date with the lockfile: no npm ci.
  writeFileSync(join(root, 'node_modules', '.package-lock.json'), '{}');
  const past = new Date(Date.now() - 60_000);
  utimesSync(join(root, 'package-lock.json'), past, past);

  stub(
    'scripts/infra',
    `echo "infra $*" >>"$STUB_LOG"
case "$1" in
  up)
    for name in $STUB_STARTS; do echo "$name" >>"$WAYBILL_INFRA_STARTED"; done
    [ -z "\${STUB_UP_FAILS:-}" ] || exit 1 ;;
  env) echo 'export MONGO_URL=mongodb://stub' ;;
esac`,
  );
  stub(
    'scripts/schemathesis',
    `echo "schemathesis $*" >>"$STUB_LOG"
[ -z "\${STUB_ST_FAILS:-}" ] || exit 1`,
  );
  stub(
    'bin/npx',
    `echo "npx $*" >>"$STUB_LOG"
for arg in "$@"; do
  case "$arg" in
    --outputFile=*)
      echo '{"numPassedTests":3,"numFailedTests":'"\${STUB_JEST_FAILS:-0}"',"numPendingTests":1}' >"\${arg#--outputFile=}"
      [ -z "\${STUB_JEST_FAILS:-}" ] || exit 1 ;;
  esac
done`,
  );
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

function stub(path: string, body: string): void {
  writeFileSync(join(root, path), `#!/usr/bin/env bash\nset -eu\n${body}\n`);
  chmodSync(join(root, path), 0o755);
}

interface Run {
  code: number;
  stdout: string;
  /** The stubs' calls, in order. */
  calls: string[];
}

function scriptsTest(env: Record<string, string>): Promise<Run> {
  const log = join(root, 'calls.log');
  writeFileSync(log, '');
  return new Promise((resolve) => {
    execFile(
      'bash',
      [join(root, 'scripts', 'test')],
      {
        env: {
          HOME: root,
          PATH: [join(root, 'bin'), dirname(process.execPath), '/usr/bin', '/bin'].join(':'),
          STUB_LOG: log,
          ...env,
        },
        timeout: 30_000,
      },
      (error, stdout) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        const calls = readFileSync(log, 'utf8').split('\n').filter(Boolean);
        resolve({ code, stdout, calls });
      },
    );
  });
}

const infraCalls = (run: Run) => run.calls.filter((c) => c.startsWith('infra '));

describe('scripts/test', () => {
  it('stops the servers a failed start left running, and only those', async () => {
    const run = await scriptsTest({ STUB_STARTS: 'redis nats', STUB_UP_FAILS: '1' });
    expect(run.code).not.toBe(0);
    expect(infraCalls(run)).toEqual(['infra up', 'infra down nats redis']);
    expect(run.calls.filter((c) => c.startsWith('npx '))).toEqual([]);
  });

  it('leaves running what it did not start, and ends with the jest summary', async () => {
    const run = await scriptsTest({ STUB_STARTS: '' });
    expect(run.code).toBe(0);
    expect(infraCalls(run)).toEqual(['infra up', 'infra browser', 'infra env']);
    expect(run.calls).toContainEqual(
      expect.stringMatching(/^npx --no-install jest --ci --maxWorkers=2 --json/),
    );
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('jest: 3 passed, 0 failed, 1 skipped');
  });

  it('runs as many test files at a time as WAYBILL_TEST_WORKERS says', async () => {
    const run = await scriptsTest({ STUB_STARTS: '', WAYBILL_TEST_WORKERS: '1' });
    expect(run.code).toBe(0);
    expect(run.calls).toContainEqual(
      expect.stringMatching(/^npx --no-install jest --ci --maxWorkers=1 --json/),
    );
  });

  it('after failing tests, stops what it started and keeps jest’s exit status', async () => {
    const run = await scriptsTest({ STUB_STARTS: 's3', STUB_JEST_FAILS: '2' });
    expect(run.code).toBe(1);
    expect(infraCalls(run)).toEqual(['infra up', 'infra browser', 'infra env', 'infra down s3']);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('jest: 3 passed, 2 failed, 1 skipped');
  });

  it('runs schemathesis after jest; its failure fails the run, jest’s line still last', async () => {
    const run = await scriptsTest({ STUB_STARTS: '', STUB_ST_FAILS: '1' });
    expect(run.code).toBe(1);
    const jest = run.calls.findIndex((c) => c.startsWith('npx --no-install jest'));
    expect(run.calls.indexOf('schemathesis ')).toBeGreaterThan(jest);
    expect(run.stdout.trimEnd().split('\n').at(-1)).toBe('jest: 3 passed, 0 failed, 1 skipped');
  });

  it('runs schemathesis even when jest failed, and keeps jest’s exit status', async () => {
    const run = await scriptsTest({ STUB_STARTS: '', STUB_JEST_FAILS: '2' });
    expect(run.code).toBe(1);
    expect(run.calls).toContain('schemathesis ');
  });

  it('stops nothing with WAYBILL_KEEP_INFRA set', async () => {
    const run = await scriptsTest({ STUB_STARTS: 'mongo nats', WAYBILL_KEEP_INFRA: '1' });
    expect(run.code).toBe(0);
    expect(infraCalls(run)).toEqual(['infra up', 'infra browser', 'infra env']);
  });
});

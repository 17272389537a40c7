import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `--help` of the scripts that install and start things says what the script does, and does
 * none of it: each runs in a copy holding only itself and scripts/lib, where anything past
 * the help would fail (no package.json, no scripts/infra, no Node on PATH).
 */
const ROOT = join(__dirname, '..', '..', '..');

function helpOf(script: string, flag: string): Promise<{ code: number; stdout: string }> {
  const root = mkdtempSync(join(tmpdir(), 'waybill-help-'));
  mkdirSync(join(root, 'scripts', 'lib'), { recursive: true });
  copyFileSync(join(ROOT, 'scripts', script), join(root, 'scripts', script));
  copyFileSync(join(ROOT, 'scripts/lib/node.sh'), join(root, 'scripts/lib/node.sh'));
  return new Promise((resolve) => {
    execFile(
      'bash',
      [join(root, 'scripts', script), flag],
      { env: { HOME: root, PATH: '/usr/bin:/bin' }, timeout: 20_000 },
      (error, stdout) => {
        rmSync(root, { recursive: true, force: true });
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout });
      },
    );
  });
}

describe.each(['platform', 'test', 'schemathesis', 'bootstrap'])('scripts/%s', (script) => {
  it.each(['--help', '-h'])('%s prints what it does and exits 0, doing nothing', async (flag) => {
    const { code, stdout } = await helpOf(script, flag);
    const header = readFileSync(join(ROOT, 'scripts', script), 'utf8').split('\n')[1];
    expect(code).toBe(0);
    expect(stdout.split('\n')[0]).toBe(header.replace(/^# ?/, ''));
  });
});

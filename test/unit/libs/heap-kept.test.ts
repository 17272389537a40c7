import { execFile } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const PROBE = join(__dirname, 'probes', 'heap-kept-probe.ts');

interface Figures {
  start: number;
  holding: number;
  retainedCount: number;
  released: number;
  afterGarbage: number;
  now: number;
}

function runProbe(): Promise<Figures> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', PROBE],
      { cwd: ROOT, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`${err.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout) as Figures);
        } catch {
          reject(new Error(`the probe printed no figures: ${JSON.stringify(stdout)}\n${stderr}`));
        }
      },
    );
  });
}

const MB = 2 ** 20;

describe('the heap a process keeps, read after each full collection', () => {
  let figures: Figures;
  beforeAll(async () => {
    figures = await runProbe();
  }, 30_000);

  it('rises by what is retained across a collection and falls once it is let go', () => {
    expect(figures.retainedCount).toBe(300_000);
    // 300,000 small objects with a string each: well over 10 MB however V8 lays them out.
    expect(figures.holding - figures.start).toBeGreaterThan(10 * MB);
    expect(figures.holding - figures.released).toBeGreaterThan(10 * MB);
  });

  it('does not count garbage: what is dropped before the collection is not reported', () => {
    expect(Math.abs(figures.afterGarbage - figures.released)).toBeLessThan(4 * MB);
  });

  it('reads the heap beside the young generation at any moment', () => {
    expect(figures.now).toBeGreaterThan(0);
  });
});

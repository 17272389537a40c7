import { join } from 'node:path';
import { runTypeScript } from '../../support/node-run';

const PROBE = join(__dirname, 'probes', 'heap-kept-probe.ts');

interface Figures {
  start: number;
  holding: number;
  retainedCount: number;
  released: number;
  afterGarbage: number;
  now: number;
}

async function runProbe(): Promise<Figures> {
  const { code, stdout, stderr } = await runTypeScript(PROBE, [], { nodeFlags: ['--expose-gc'] });
  try {
    if (code !== 0) throw new Error(`exit ${code}`);
    return JSON.parse(stdout) as Figures;
  } catch (err) {
    throw new Error(`the probe printed no figures (${String(err)}): ${stdout}\n${stderr}`);
  }
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

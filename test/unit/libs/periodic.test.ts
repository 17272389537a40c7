import { Periodic } from '../../../libs/periodic';

describe('Periodic', () => {
  it('never runs its work twice at once: a run due meanwhile joins the one under way', async () => {
    let runs = 0;
    let finish: () => void = () => undefined;
    const periodic = new Periodic(
      60_000,
      () => {
        runs += 1;
        return new Promise<void>((resolve) => (finish = resolve));
      },
      () => undefined,
    );
    const first = periodic.runOnce();
    const second = periodic.runOnce();
    expect(second).toBe(first);
    finish();
    await first;
    // Once it is over, the next run is a new one.
    const third = periodic.runOnce();
    expect(third).not.toBe(first);
    finish();
    await third;
    expect(runs).toBe(2);
  });

  it('stop waits for the run under way', async () => {
    let done = false;
    const periodic = new Periodic(
      60_000,
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        done = true;
      },
      () => undefined,
    );
    periodic.start();
    void periodic.runOnce();
    await periodic.stop();
    expect(done).toBe(true);
  });

  it('tells a run looping over batches that a stop was asked, until the next start', async () => {
    let batches = 0;
    let stopAsked: () => void = () => undefined;
    const asked = new Promise<void>((resolve) => (stopAsked = resolve));
    const periodic: Periodic = new Periodic(
      60_000,
      async () => {
        while (!periodic.stopping) {
          batches++;
          if (batches === 3) stopAsked();
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      },
      () => undefined,
    );
    expect(periodic.stopping).toBe(false);
    periodic.start();
    const run = periodic.runOnce();
    await asked;
    await periodic.stop();
    await run;
    expect(periodic.stopping).toBe(true);
    expect(batches).toBeGreaterThanOrEqual(3);
    periodic.start();
    expect(periodic.stopping).toBe(false);
    await periodic.stop();
  });

  it('reports a failed run instead of leaving an unhandled rejection, and runs again after', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const periodic = new Periodic(
      60_000,
      async () => {
        runs += 1;
        if (runs === 1) throw new Error('database down');
      },
      (err) => errors.push(err),
    );
    await periodic.runOnce();
    await periodic.runOnce();
    expect(errors).toEqual([new Error('database down')]);
    expect(runs).toBe(2);
  });
});

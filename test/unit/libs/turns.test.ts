import fc from 'fast-check';
import { Turns } from '../../../libs/turns';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('Turns', () => {
  it('runs one key’s tasks one at a time, in the order given, and other keys’ alongside', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.nat(3)), { maxLength: 30 }),
        async (tasks) => {
          const turns = new Turns();
          const running = new Map<string, number>();
          const order = new Map<string, number[]>();
          await Promise.all(
            tasks.map(([key, ticks], i) =>
              turns.run(key, async () => {
                running.set(key, (running.get(key) ?? 0) + 1);
                expect(running.get(key)).toBe(1);
                for (let t = 0; t < ticks; t++) await tick();
                order.set(key, [...(order.get(key) ?? []), i]);
                running.set(key, 0);
              }),
            ),
          );
          for (const [key, done] of order) {
            const given = tasks.flatMap(([k], i) => (k === key ? [i] : []));
            expect(done).toEqual(given);
          }
          await tick();
          expect(turns.busyKeys).toBe(0);
        },
      ),
    );
  });

  it('lets other keys run while one key waits', async () => {
    const turns = new Turns();
    let release = () => {};
    const slow = turns.run('a', () => new Promise<void>((resolve) => (release = resolve)));
    await expect(turns.run('b', async () => 'b done')).resolves.toBe('b done');
    release();
    await slow;
  });

  it('gives each caller its own result or error, and a failure does not stop the next turn', async () => {
    const turns = new Turns();
    const first = turns.run('k', async () => {
      throw new Error('lost');
    });
    const second = turns.run('k', async () => 2);
    await expect(first).rejects.toThrow('lost');
    await expect(second).resolves.toBe(2);
    await tick();
    expect(turns.busyKeys).toBe(0);
  });
});

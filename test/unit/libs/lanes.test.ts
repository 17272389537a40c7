import fc from 'fast-check';
import { runInLanes } from '../../../libs/lanes';

const tick = () => new Promise((done) => setImmediate(done));

describe('runInLanes', () => {
  it('works every item once, a lane’s in order, never more lanes at once than its width', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ lane: fc.constantFrom('a', 'b', 'c', 'd', 'e'), ticks: fc.nat(3) }), {
          maxLength: 40,
        }),
        fc.integer({ min: 1, max: 6 }),
        async (specs, width) => {
          const items = specs.map((spec, id) => ({ ...spec, id }));
          const worked: number[] = [];
          const busyLanes = new Set<string>();
          let most = 0;
          await runInLanes(
            items,
            (item) => item.lane,
            width,
            async (item) => {
              // One item of a lane at a time.
              expect(busyLanes.has(item.lane)).toBe(false);
              busyLanes.add(item.lane);
              most = Math.max(most, busyLanes.size);
              for (let i = 0; i < item.ticks; i++) await tick();
              busyLanes.delete(item.lane);
              worked.push(item.id);
            },
          );
          expect([...worked].sort((x, y) => x - y)).toEqual(items.map((item) => item.id));
          for (const lane of new Set(items.map((item) => item.lane))) {
            const order = worked.filter((id) => items[id].lane === lane);
            expect(order).toEqual([...order].sort((x, y) => x - y));
          }
          expect(most).toBeLessThanOrEqual(width);
        },
      ),
    );
  });

  it('lets other lanes go on while one is held up', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((done) => (release = done));
    const worked: string[] = [];
    const run = runInLanes(
      ['slow', 'x', 'y', 'z'],
      (item) => item,
      2,
      async (item) => {
        if (item === 'slow') await held;
        worked.push(item);
      },
    );
    for (let i = 0; i < 5; i++) await tick();
    expect(worked).toEqual(['x', 'y', 'z']);
    release();
    await run;
    expect(worked).toEqual(['x', 'y', 'z', 'slow']);
  });

  it('works the rest of the items when one fails, then throws the failure', async () => {
    const worked: number[] = [];
    await expect(
      runInLanes(
        [1, 2, 3, 4],
        () => 'one lane',
        3,
        async (n) => {
          if (n === 2) throw new Error('two failed');
          worked.push(n);
        },
      ),
    ).rejects.toThrow('two failed');
    expect(worked).toEqual([1, 3, 4]);
  });

  it('leaves the rest of a lane when its work says so, and goes on with the others', async () => {
    const worked: string[] = [];
    await runInLanes(
      ['a1', 'b1', 'a2', 'b2', 'a3'],
      (item) => item[0],
      2,
      async (item) => {
        worked.push(item);
        return item !== 'a2';
      },
    );
    expect(worked.sort()).toEqual(['a1', 'a2', 'b1', 'b2']);
  });
});

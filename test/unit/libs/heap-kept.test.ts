import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { heapBesideYoung, observeHeapKept } from '../../../libs/heap-kept';

setFlagsFromString('--expose-gc');
const fullCollection = runInNewContext('gc') as () => void;

describe('the heap a process keeps, read after each full collection', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  /** The figure reported after the next full collection. */
  const keptAfterCollection = async (): Promise<number> => {
    const reported = new Promise<number>((resolve) => {
      stop = observeHeapKept((bytes) => {
        stop?.();
        resolve(bytes);
      });
    });
    fullCollection();
    return reported;
  };

  it('rises by what is retained across a collection and falls once it is let go', async () => {
    const before = await keptAfterCollection();
    let retained: { id: number; label: string }[] | undefined = Array.from(
      { length: 300_000 },
      (_, id) => ({ id, label: `item ${id}` }),
    );
    const holding = await keptAfterCollection();
    expect(retained).toHaveLength(300_000);
    expect(holding - before).toBeGreaterThan(10 * 2 ** 20);
    retained = undefined;
    const after = await keptAfterCollection();
    expect(holding - after).toBeGreaterThan(10 * 2 ** 20);
  });

  it('does not count garbage: what is dropped before the collection is not reported', async () => {
    const before = await keptAfterCollection();
    for (let i = 0; i < 30; i++) {
      Array.from({ length: 10_000 }, (_, id) => ({ id, label: `garbage ${id}` }));
    }
    const after = await keptAfterCollection();
    expect(Math.abs(after - before)).toBeLessThan(4 * 2 ** 20);
  });

  it('reads the heap beside the young generation at any moment', () => {
    expect(heapBesideYoung()).toBeGreaterThan(0);
  });
});

/**
 * Runs `work` over `items`, those of one lane (`laneOf`) one after another in the order given,
 * up to `width` lanes at once: a slow lane holds back only its own items. Work that answers
 * `false` leaves the rest of its lane unworked (they must not go before it); every other item
 * is worked once, even when some fail, and the first failure is thrown once all are done.
 */
export async function runInLanes<T>(
  items: readonly T[],
  laneOf: (item: T) => string,
  width: number,
  work: (item: T) => Promise<boolean | void>,
): Promise<void> {
  const lanes = new Map<string, T[]>();
  for (const item of items) {
    const key = laneOf(item);
    const lane = lanes.get(key);
    if (lane) lane.push(item);
    else lanes.set(key, [item]);
  }
  const queue = [...lanes.values()];
  let next = 0;
  const failures: unknown[] = [];
  await Promise.all(
    Array.from({ length: Math.min(Math.max(1, width), queue.length) }, async () => {
      while (next < queue.length) {
        for (const item of queue[next++]) {
          try {
            if ((await work(item)) === false) break;
          } catch (err) {
            failures.push(err);
          }
        }
      }
    }),
  );
  if (failures.length > 0) throw failures[0];
}

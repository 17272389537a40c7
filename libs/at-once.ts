/**
 * Runs `work` for each item, at most `limit` at a time, and settles when all have ended: one
 * item's failure stops no other, and the first is rethrown at the end.
 */
export async function forEachAtOnce<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++];
      try {
        await work(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  if (failure) throw failure.err;
}

/**
 * Waits for `work` to settle, or `ms` to pass, whichever comes first, and never rejects: for
 * work worth waiting a moment for and not longer (a flush before a stop, a check before a
 * scrape). The timer does not outlive the wait.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  await answerWithin(
    work.then(() => undefined),
    ms,
    undefined,
  );
}

/**
 * What `work` answers, or `otherwise` once `ms` have passed or when it fails: never rejects,
 * and the timer does not outlive the wait.
 */
export async function answerWithin<T>(work: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, otherwise)));
  try {
    return await Promise.race([work.catch(() => otherwise), late]);
  } finally {
    clearTimeout(timer);
  }
}

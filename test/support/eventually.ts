import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /** Give up once this many milliseconds have passed since the first attempt (default 5000). */
  timeout?: number;
  /** Milliseconds between the end of one attempt and the start of the next (default 25). */
  interval?: number;
  /** Stop waiting at once when this aborts (e.g. the process under test exited). */
  signal?: AbortSignal;
}

/**
 * Runs `assertion` until it returns without throwing, and returns what it returned. While it
 * throws it is tried again every `interval` ms; once `timeout` ms have passed (or `signal`
 * aborts), the error of the last attempt is rethrown, its message extended by how long it was
 * retried, so that the test reports the expectation that was still failing.
 *
 * The condition belongs in the assertion: `await eventually(() => expect(seen).toContain(x))`.
 */
export async function eventually<T>(
  assertion: () => T | Promise<T>,
  { timeout = 5_000, interval = 25, signal }: EventuallyOptions = {},
): Promise<T> {
  const started = Date.now();
  for (let attempts = 1; ; attempts++) {
    try {
      return await assertion();
    } catch (error) {
      const waited = Date.now() - started;
      if (waited >= timeout || signal?.aborted) throw gaveUp(error, waited, attempts);
      try {
        await sleep(Math.min(interval, timeout - waited), undefined, { signal });
      } catch {
        throw gaveUp(error, Date.now() - started, attempts);
      }
    }
  }
}

/**
 * The last attempt's own error with the wait added to its message; anything thrown that is not
 * an error is wrapped in one. (Duck-typed: errors from Node itself, such as fetch's, come from
 * another realm than jest's sandbox and fail `instanceof Error`.)
 */
function gaveUp(error: unknown, waited: number, attempts: number): Error {
  const note = `(still failing after ${waited} ms, ${attempts} attempt${attempts === 1 ? '' : 's'})`;
  if (isError(error)) {
    try {
      error.message = `${error.message}\n\n${note}`;
      return error;
    } catch {
      // a frozen error: wrap it below
    }
  }
  return new Error(`${isError(error) ? error.message : String(error)}\n\n${note}`, {
    cause: error,
  });
}

function isError(value: unknown): value is Error {
  return (
    typeof value === 'object' && value !== null && typeof (value as Error).message === 'string'
  );
}

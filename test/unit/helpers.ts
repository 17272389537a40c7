/** Runs `fn` and returns what it threw; fails the test when it returns normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the function to throw, but it returned');
}

/**
 * Calls `fn` and returns why it failed, whether it threw or returned a rejected promise;
 * fails the test when it succeeds.
 */
export async function rejectionOf(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

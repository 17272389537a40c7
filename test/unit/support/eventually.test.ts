import { stripVTControlCharacters as plain } from 'node:util';
import { eventually } from '../../support/eventually';

describe('eventually', () => {
  it('returns what the assertion returns once it stops throwing, and stops trying then', async () => {
    let calls = 0;
    const value = await eventually(() => {
      calls++;
      expect(calls).toBeGreaterThanOrEqual(3);
      return `after ${calls}`;
    });
    expect(value).toBe('after 3');
    expect(calls).toBe(3);
  });

  it('awaits an async assertion, and with the defaults tries again within moments', async () => {
    let calls = 0;
    const started = Date.now();
    await eventually(async () => {
      await Promise.resolve();
      expect(++calls).toBe(4);
    });
    expect(calls).toBe(4);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('rethrows the error of the last attempt, with how long it waited, once the time is up', async () => {
    let calls = 0;
    const thrown: unknown[] = [];
    const started = Date.now();
    const failure = await eventually(
      () => {
        try {
          expect(++calls).toBe(0);
        } catch (error) {
          thrown.push(error);
          throw error;
        }
      },
      { timeout: 120, interval: 10 },
    ).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(120);
    expect(calls).toBeGreaterThan(2);
    expect(failure).toBe(thrown.at(-1));
    const message = plain((failure as Error).message);
    expect(message).toContain(`Received: ${calls}`);
    expect(message).toMatch(new RegExp(`still failing after \\d+ ms, ${calls} attempts\\)$`));
    const waited = Number(/after (\d+) ms/.exec(message)?.[1]);
    expect(waited).toBeGreaterThanOrEqual(120);
  });

  it('wraps a thrown non-error in an Error that keeps it as the cause', async () => {
    const failure = await eventually(
      () => {
        throw 'not ready';
      },
      { timeout: 0 },
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    // A loaded machine may take a millisecond between the try and the report.
    expect((failure as Error).message).toMatch(
      /^not ready\n\n\(still failing after \d+ ms, 1 attempt\)$/,
    );
    expect((failure as Error).cause).toBe('not ready');
  });

  it('stops waiting as soon as its signal aborts', async () => {
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 50);
    const started = Date.now();
    const failure = await eventually(() => expect('up').toBe('down'), {
      timeout: 10_000,
      signal: stop.signal,
    }).catch((error: unknown) => error);
    expect(plain((failure as Error).message)).toMatch(/Expected: "down"[\s\S]*still failing after/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

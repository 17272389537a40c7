import { PassThrough } from 'node:stream';
import { BodyWatch, watchBody } from '../../../services/file/body-watch';

const IDLE = 1000;
const DEADLINE = 10_000;
const KB = 1024;

/** Lets stream callbacks (next ticks, immediates) run; timers stay fake. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
});
afterEach(() => jest.useRealTimers());

function watched(minBytesPerWindow?: number) {
  const source = new PassThrough();
  const watch = watchBody(source, { idleMs: IDLE, deadlineMs: DEADLINE, minBytesPerWindow });
  const errors: Error[] = [];
  watch.on('error', (err) => errors.push(err));
  return { source, watch, errors };
}

/** Writes `bytes` to `source` every half idle window, `times` times. */
async function everyHalfWindow(source: PassThrough, bytes: number, times: number) {
  for (let i = 0; i < times; i++) {
    source.write(Buffer.alloc(bytes));
    await settle();
    jest.advanceTimersByTime(IDLE / 2);
    await settle();
  }
}

describe('BodyWatch', () => {
  it('passes a body that keeps coming, and stays quiet after its end', async () => {
    const { source, watch, errors } = watched();
    const received: Buffer[] = [];
    watch.on('data', (chunk: Buffer) => received.push(chunk));
    for (let i = 0; i < 5; i++) {
      source.write(Buffer.alloc(KB, i));
      await settle();
      jest.advanceTimersByTime(IDLE - 1);
    }
    source.end();
    await settle();
    jest.advanceTimersByTime(2 * DEADLINE);
    await settle();
    expect(errors).toEqual([]);
    expect(Buffer.concat(received).length).toBe(5 * KB);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('aborts with 408 once the client sends nothing for idleMs', async () => {
    const { source, watch, errors } = watched();
    watch.resume();
    source.write(Buffer.alloc(KB));
    await settle();
    jest.advanceTimersByTime(IDLE - 1);
    expect(errors).toEqual([]);
    jest.advanceTimersByTime(1);
    await settle();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      code: 408,
      type: 'BODY_TIMEOUT',
      message:
        'No data received for 1 s; the upload was cancelled. Send the body without pauses and retry',
    });
    expect(watch.destroyed).toBe(true);
    expect(jest.getTimerCount()).toBe(0);
  });

  it.each([
    ['without a minimum rate', undefined],
    ['with one (no window judged while the consumer is behind)', KB],
  ])('never blames the client while bytes wait for a slow consumer, %s', async (_how, minimum) => {
    const { source, watch, errors } = watched(minimum);
    // Nobody reads: the client is ahead, the consumer is behind.
    source.write(Buffer.alloc(64 * KB));
    await settle();
    jest.advanceTimersByTime(5 * IDLE);
    await settle();
    expect(errors).toEqual([]);
    // The consumer catches up; from then on the client's silence counts again, reported by the
    // idle timer (a window that brought nothing is not the rate's to judge).
    watch.resume();
    await settle();
    jest.advanceTimersByTime(IDLE);
    await settle();
    expect(errors.map((e) => e.message)).toEqual([
      'No data received for 1 s; the upload was cancelled. Send the body without pauses and retry',
    ]);
  });

  it('aborts with 408 a body that trickles in for longer than deadlineMs', async () => {
    const { source, watch, errors } = watched();
    watch.resume();
    await everyHalfWindow(source, 10, (2 * DEADLINE) / IDLE);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      code: 408,
      message:
        'The upload did not arrive within 10 s; send smaller files, or from a faster connection',
    });
  });

  it('aborts with 408 a client that sends less than the minimum in a window, as soon as it ends', async () => {
    const { source, watch, errors } = watched(KB);
    watch.resume();
    // Enough in the first window; then a byte every half window, which no idle timer catches.
    await everyHalfWindow(source, KB / 2, 2);
    expect(errors).toEqual([]);
    await everyHalfWindow(source, 1, 2);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      code: 408,
      type: 'BODY_TIMEOUT',
      message:
        'The upload sent 2 bytes in 1 s, less than the 1024 it must send in that time; send it from a faster connection',
    });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('passes on an error of the body it watches', async () => {
    const { source, errors } = watched();
    source.destroy(new Error('aborted'));
    await settle();
    expect(errors.map((e) => e.message)).toEqual(['aborted']);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('ends at once, before any timeout, with a body destroyed without an error or before it came', async () => {
    const { source, watch, errors } = watched();
    source.write(Buffer.alloc(KB));
    await settle();
    source.destroy(); // no error: only 'close'
    await settle();
    expect(errors.map((e) => (e as NodeJS.ErrnoException).code)).toEqual([
      'ERR_STREAM_PREMATURE_CLOSE',
    ]);
    expect(watch.destroyed).toBe(true);
    expect(jest.getTimerCount()).toBe(0);

    // Its client gone while the upload waited: its 'close' came before anyone listened.
    const gone = new PassThrough();
    gone.destroy();
    await settle();
    const late = watchBody(gone, { idleMs: IDLE, deadlineMs: DEADLINE });
    const lateErrors: Error[] = [];
    late.on('error', (err) => lateErrors.push(err));
    await settle();
    expect(lateErrors).toHaveLength(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it('spells fractions of a second', async () => {
    const watch = new BodyWatch({ idleMs: 1500, deadlineMs: DEADLINE });
    const error = new Promise<Error>((resolve) => watch.once('error', resolve));
    watch.resume();
    jest.advanceTimersByTime(1500);
    expect((await error).message).toMatch(/^No data received for 1.5 s;/);
  });
});

describe('BodyWatch with a most', () => {
  it('passes a body up to the most, and fails with its error at the first byte past it', async () => {
    const source = new PassThrough();
    const tooLarge = new Error('too large');
    const watch = watchBody(source, {
      idleMs: IDLE,
      deadlineMs: DEADLINE,
      maxBytes: { bytes: 3 * KB, tooLarge: () => tooLarge },
    });
    const errors: Error[] = [];
    watch.on('error', (err) => errors.push(err));
    let received = 0;
    watch.on('data', (chunk: Buffer) => (received += chunk.length));
    for (let i = 0; i < 3; i++) {
      source.write(Buffer.alloc(KB));
      await settle();
    }
    expect(errors).toEqual([]);
    expect(received).toBe(3 * KB);
    source.write(Buffer.alloc(1));
    await settle();
    expect(errors).toEqual([tooLarge]);
    expect(received).toBe(3 * KB);
  });
});

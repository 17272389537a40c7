import { EventEmitter } from 'node:events';
import { INTERRUPTED_STOP_MS, stopOnSignal } from '../../../bin/cli-services';

/**
 * A command interrupted (Ctrl-C, SIGTERM): its broker stopped, within a bound, and the command
 * ended as a shell says a signal ends it, never 0. moleculer's own handler, which stopped the
 * broker and exited 0, is off (the broker options' skipProcessEventRegistration).
 */
describe('stopOnSignal', () => {
  beforeEach(() => jest.spyOn(process.stderr, 'write').mockImplementation(() => true));
  afterEach(() => jest.restoreAllMocks());

  it.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ])('stops the broker on %s, then exits %i', async (signal, code) => {
    const signals = new EventEmitter();
    const stop = jest.fn(() => Promise.resolve());
    const exited = new Promise<number>((resolve) => stopOnSignal({ stop }, resolve, signals));
    signals.emit(signal);
    expect(await exited).toBe(code);
    expect(stop).toHaveBeenCalledTimes(1);
  });

  it('exits all the same once the broker has taken INTERRUPTED_STOP_MS to stop', async () => {
    jest.useFakeTimers();
    try {
      const signals = new EventEmitter();
      const exit = jest.fn();
      stopOnSignal({ stop: () => new Promise<void>(() => undefined) }, exit, signals);
      signals.emit('SIGINT');
      jest.advanceTimersByTime(INTERRUPTED_STOP_MS - 1);
      expect(exit).not.toHaveBeenCalled();
      jest.advanceTimersByTime(1);
      expect(exit).toHaveBeenCalledWith(130);
    } finally {
      jest.useRealTimers();
    }
  });

  it('listens no more once the command is over, and then has no stop of its own', () => {
    const signals = new EventEmitter();
    const done = stopOnSignal({ stop: () => Promise.resolve() }, jest.fn(), signals);
    expect(signals.listenerCount('SIGINT') + signals.listenerCount('SIGTERM')).toBe(2);
    expect(done()).toBeUndefined();
    expect(signals.listenerCount('SIGINT') + signals.listenerCount('SIGTERM')).toBe(0);
  });

  it('stops the broker once, whatever signals follow, and hands the command that stop', async () => {
    const signals = new EventEmitter();
    const stop = jest.fn(() => Promise.resolve());
    const exit = jest.fn();
    const done = stopOnSignal({ stop }, exit, signals);
    signals.emit('SIGINT');
    signals.emit('SIGTERM');
    signals.emit('SIGINT');
    const stopping = done();
    expect(stopping).toBeInstanceOf(Promise);
    await stopping;
    expect(stop).toHaveBeenCalledTimes(1);
    expect(exit.mock.calls).toEqual([[130]]);
  });
});

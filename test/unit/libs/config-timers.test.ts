import { ConfigError, MAX_TIMER_MS, describeConfig, loadConfig } from '../../../libs/config';

/** Whether loadConfig refuses `env`, naming `name`. */
function refuses(name: string, value: string): boolean {
  try {
    loadConfig({ [name]: value });
    return false;
  } catch (err) {
    return err instanceof ConfigError && err.message.startsWith(`${name}: `);
  }
}

describe('_MS variables', () => {
  const timers = describeConfig()
    .map((v) => v.name)
    .filter((name) => name.endsWith('_MS'));

  it('are capped at 2^31 - 1 ms, which Node runs a longer timer after 1 ms, tighter caps kept', () => {
    expect(MAX_TIMER_MS).toBe(2147483647);
    expect(timers).toEqual(
      expect.arrayContaining(['ORDER_SWEEP_INTERVAL_MS', 'COURIER_LOCATION_FLUSH_MS']),
    );
    const uncapped = timers.filter((name) => !refuses(name, String(MAX_TIMER_MS + 1)));
    expect(uncapped).toEqual([]);
    expect(
      loadConfig({ ORDER_SWEEP_INTERVAL_MS: String(MAX_TIMER_MS) }).order.sweepIntervalMs,
    ).toBe(MAX_TIMER_MS);
    // joi's `max` replaces an earlier one: the cap must not loosen a variable's own.
    expect(refuses('NOTIFY_TIMEOUT_MS', '60001')).toBe(true);
    expect(refuses('WEBHOOK_TIMEOUT_MS', '60001')).toBe(true);
  });
});

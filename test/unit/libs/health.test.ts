import type { ServiceBroker } from 'moleculer';
import {
  failing,
  readiness,
  readyWithoutTransporter,
  registerHealthCheck,
} from '../../../libs/health';

/** What readiness reads of a broker: started, and its transporter's connection. */
const brokerWith = (connected: boolean) =>
  ({
    started: true,
    stopping: false,
    transit: { connected, isReady: true },
  }) as unknown as ServiceBroker;

describe('readiness', () => {
  it('is lost with any required dependency', async () => {
    const broker = brokerWith(true);
    registerHealthCheck(broker, 'mongo:x', () => false);
    registerHealthCheck(broker, 'redis', () => true, { required: false });
    const state = await readiness(broker);
    expect(state).toEqual({
      ready: false,
      checks: { broker: true, transporter: true, 'mongo:x': false, redis: true },
      degraded: [],
    });
    expect(failing(state)).toEqual(['mongo:x']);
  });

  it('is kept, degraded, without a dependency that is not required', async () => {
    const broker = brokerWith(true);
    registerHealthCheck(broker, 'redis', () => Promise.reject(new Error('down')), {
      required: false,
    });
    const state = await readiness(broker);
    expect(state).toEqual({
      ready: true,
      checks: { broker: true, transporter: true, redis: false },
      degraded: ['redis'],
    });
    expect(failing(state)).toEqual([]);
  });

  it('counts a check that does not answer in time as down, and asks it once while it runs', async () => {
    const broker = brokerWith(true);
    let asked = 0;
    let answer: (up: boolean) => void = () => undefined;
    registerHealthCheck(broker, 's3', () => {
      asked += 1;
      return new Promise<boolean>((resolve) => (answer = resolve));
    });
    registerHealthCheck(broker, 'redis', () => true);
    const [first, second] = await Promise.all([readiness(broker), readiness(broker)]);
    for (const state of [first, second]) {
      expect(state).toEqual({
        ready: false,
        checks: { broker: true, transporter: true, s3: false, redis: true },
        degraded: [],
      });
    }
    expect(asked).toBe(1);
    // Once it answers, the next probe asks afresh.
    answer(true);
    await new Promise((resolve) => setImmediate(resolve));
    const after = readiness(broker);
    answer(true);
    expect(await after).toMatchObject({ ready: true });
    expect(asked).toBe(2);
  });

  it('asks afresh a check that has not answered for five deadlines', async () => {
    const broker = brokerWith(true);
    let asked = 0;
    registerHealthCheck(broker, 's3', () => {
      asked += 1;
      // The first never answers; the next at once.
      return asked === 1 ? new Promise<boolean>(() => undefined) : true;
    });
    expect(await readiness(broker, 10)).toMatchObject({ ready: false });
    expect(await readiness(broker, 10)).toMatchObject({ ready: false });
    expect(asked).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await readiness(broker, 10)).toMatchObject({ ready: true });
    expect(asked).toBe(2);
  });

  it('needs the transporter, unless the process serves without it once started', async () => {
    const broker = brokerWith(false);
    expect(await readiness(broker)).toMatchObject({ ready: false, degraded: [] });
    readyWithoutTransporter(broker);
    expect(await readiness(broker)).toEqual({
      ready: true,
      checks: { broker: true, transporter: false },
      degraded: ['transporter'],
    });
    const starting = { ...brokerWith(false), started: false } as unknown as ServiceBroker;
    readyWithoutTransporter(starting);
    expect(await readiness(starting)).toMatchObject({ ready: false, degraded: ['transporter'] });
  });
});

import { ServiceBroker, type ServiceSchema } from 'moleculer';
import { loadConfig } from '../../../libs/config';
import { withCallMetrics } from '../../../libs/call-metrics';
import {
  ENTRY_POINT,
  KEPT_BY_ENTRY_POINTS,
  exceptEntryPoints,
  forCalls,
} from '../../../libs/entry-points';
import { createBrokerOptions } from '../../../moleculer.config';
import { brokerWithOps, samples } from '../../support/metrics';

type LocalActionHook = (this: ServiceBroker, next: unknown, action: object) => unknown;

describe('entry points', () => {
  let broker: ServiceBroker;
  let opsUrl: string;
  const finished: string[] = [];

  const slow = (name: string) => async () => {
    await new Promise((resolve) => setTimeout(resolve, 300));
    finished.push(name);
    return name;
  };

  beforeAll(async () => {
    ({ broker, opsUrl } = await brokerWithOps('entry-test'));
    broker.createService({
      name: 'door',
      actions: {
        enter: { ...ENTRY_POINT, timeout: 50, handler: slow('enter') },
        call: { timeout: 50, handler: slow('call') },
        failing: {
          ...ENTRY_POINT,
          handler: () => Promise.reject(new Error('refused at the door')),
        },
      },
      // moleculer's action type leaves out `timeout`, which it reads.
    } as ServiceSchema);
    await broker.start();
  });

  afterAll(() => broker.stop());

  it('pass no call middleware: no timeout, no call metrics, errors as thrown', async () => {
    await expect(broker.call('door.call')).rejects.toMatchObject({ name: 'RequestTimeoutError' });
    await expect(broker.call('door.enter')).resolves.toBe('enter');
    await expect(broker.call('door.failing')).rejects.toThrow('refused at the door');
    const counted = (await samples(opsUrl, 'moleculer_request_total')).map((s) => s.labels.action);
    expect(counted).toContain('door.call');
    expect(counted).not.toContain('door.enter');
    expect(counted).not.toContain('door.failing');
  });

  it('are still tracked: a stop waits for the ones in progress', async () => {
    const stopping = new ServiceBroker({
      ...createBrokerOptions(loadConfig({ NATS_URL: '', NAMESPACE: 'entry-stop' })),
      logger: false,
    });
    stopping.createService({
      name: 'door',
      actions: { enter: { ...ENTRY_POINT, handler: slow('tracked') } },
    });
    await stopping.start();
    const entering = stopping.call('door.enter');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await stopping.stop();
    expect(finished).toContain('tracked');
    await expect(entering).resolves.toBe('tracked');
  });

  it('leave entry points unwrapped, wrap every other action, and find built-ins by name', () => {
    const wrapped = () => Promise.resolve('wrapped');
    const exempt = exceptEntryPoints({ localAction: () => wrapped });
    const hooks = (exempt as (b: ServiceBroker) => { localAction: LocalActionHook })(broker);
    const own = () => Promise.resolve('own');
    expect(hooks.localAction.call(broker, own, ENTRY_POINT)).toBe(own);
    expect(hooks.localAction.call(broker, own, {})).toBe(wrapped);
    const timeout = exceptEntryPoints('Timeout') as (b: ServiceBroker) => { name: string };
    expect(timeout(broker).name).toBe('Timeout');
    expect(() => (exceptEntryPoints('Nowhere') as (b: ServiceBroker) => unknown)(broker)).toThrow(
      'no built-in middleware named Nowhere',
    );
  });

  it("keep the tracker and tracing as moleculer's own, and wrap every other built-in", () => {
    const entries = forCalls(withCallMetrics([]));
    expect(entries.filter((e) => typeof e === 'string')).toEqual([...KEPT_BY_ENTRY_POINTS]);
    const builtIns = ServiceBroker.INTERNAL_MIDDLEWARES.filter((name) => name !== 'Metrics');
    // Every other built-in, and our call metrics, wrapped as a function of the broker.
    expect(entries.filter((e) => typeof e === 'function')).toHaveLength(
      builtIns.length - KEPT_BY_ENTRY_POINTS.length + 1,
    );
  });
});

import { randomBytes } from 'node:crypto';
import { ServiceBroker, type ServiceSchema } from 'moleculer';
import { loadConfig } from '../../../libs/config';
import { call, retriesFor, SAFE_RETRIES } from '../../../libs/contracts';
import { serviceBusy, serviceUnavailable } from '../../../libs/errors';
import {
  circuitBreaker,
  isLostCall,
  isNodeFailure,
  stopAndExit,
  whenStopping,
} from '../../../libs/resilience';
import { createBrokerOptions } from '../../../moleculer.config';

/**
 * The brokers' retry policy, circuit breaker and remote-call middleware, between brokers of
 * this process over moleculer's in-memory transporter: nodes are "lost" the way the registry
 * loses them when their heartbeats stop.
 */

interface Node {
  broker: ServiceBroker;
  /** Calls each action received. */
  received: Record<string, number>;
}

let namespace: string;
const brokers: ServiceBroker[] = [];
/** Calls that never answer by themselves; answered at the end so that their nodes can stop. */
const hanging: Array<() => void> = [];

beforeEach(() => {
  namespace = `unit-${randomBytes(4).toString('hex')}`;
});

afterEach(async () => {
  for (const answer of hanging.splice(0)) answer();
  await Promise.all(brokers.splice(0).map((b) => b.stop()));
});

function broker(nodeID: string): ServiceBroker {
  const config = loadConfig({
    NAMESPACE: namespace,
    NODE_ID: nodeID,
    OPS_PORT: '0',
    REQUEST_TIMEOUT_MS: '2000',
  });
  const b = new ServiceBroker({
    ...createBrokerOptions(config),
    transporter: 'Fake',
    logger: false,
  });
  brokers.push(b);
  return b;
}

type Behaviour = 'answer' | 'hang' | 'unavailable';

/** A node running `service` whose actions behave as told, counting the calls they get. */
async function node(nodeID: string, service: string, actions: Record<string, Behaviour>) {
  const b = broker(nodeID);
  const received: Record<string, number> = {};
  const schema: ServiceSchema = {
    name: service,
    actions: Object.fromEntries(
      Object.entries(actions).map(([name, behaviour]) => [
        name,
        () => {
          received[name] = (received[name] ?? 0) + 1;
          if (behaviour === 'unavailable') throw serviceUnavailable('down');
          if (behaviour === 'answer') return { from: nodeID };
          return new Promise((resolve) => hanging.push(() => resolve({ from: nodeID })));
        },
      ]),
    ),
  };
  b.createService(schema);
  await b.start();
  return { broker: b, received } satisfies Node;
}

async function caller(...services: string[]): Promise<ServiceBroker> {
  const b = broker('caller');
  await b.start();
  await b.waitForServices(services);
  return b;
}

/**
 * The remote calls a broker's stop waits for. moleculer has no public view of them: its
 * ContextTracker keeps them in this list.
 */
const trackedContexts = (b: ServiceBroker) =>
  (b as unknown as { _trackedContexts: unknown[] })._trackedContexts;

/** What the registry does when a node's heartbeats stop: it drops it, rejecting its calls. */
const lose = (b: ServiceBroker, nodeID: string) => b.registry.nodes.disconnected(nodeID, true);

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((r) => setTimeout(r, 5));
};

const route = {
  origin: { lat: 6.6, lon: 3.35 },
  destination: { lat: 6.45, lon: 3.5 },
};

describe('a call lost with its node', () => {
  it('is repeated on another node when its action is safe to repeat', async () => {
    const lost = await node('lost', 'geo', { route: 'hang' });
    const other = await node('other', 'geo', { route: 'answer' });
    const c = await caller('geo');
    const answer = call(c, 'geo.route', route, { nodeID: 'lost' });
    await until(() => lost.received.route === 1);
    lose(c, 'lost');
    await expect(answer).resolves.toEqual({ from: 'other' });
    expect(other.received.route).toBe(1);
  });

  it('is not repeated when its action is not safe to repeat, and says it was lost', async () => {
    const lost = await node('lost', 'account', { createUser: 'hang' });
    const other = await node('other', 'account', { createUser: 'answer' });
    const c = await caller('account');
    const params = { name: 'A', email: 'a@example.com', phone: '+2348012345678' };
    const answer = call(c, 'account.createUser', params, { nodeID: 'lost' });
    await until(() => lost.received.createUser === 1);
    lose(c, 'lost');
    await expect(answer).rejects.toMatchObject({ type: 'REQUEST_REJECTED' });
    expect(other.received.createUser).toBeUndefined();
  });
});

describe('a remote call never answered', () => {
  it('is released when its time is up: nothing stays pending for a stop to wait on', async () => {
    const crashed = await node('crashed', 'geo', { route: 'answer' });
    const c = await caller('geo');
    // It hears nothing and says nothing more, not even goodbye; the caller does not know yet.
    await crashed.broker.transit?.tx.disconnect();
    await expect(c.call('geo.route', route, { timeout: 100 })).rejects.toMatchObject({
      type: 'REQUEST_TIMEOUT',
    });
    expect(c.transit?.pendingRequests.size).toBe(0);
    expect(trackedContexts(c)).toEqual([]);
  });
});

describe('while the transporter is disconnected', () => {
  it('a remote call fails at once as BrokerDisconnectedError, and nothing stays pending', async () => {
    await node('far', 'geo', { route: 'answer' });
    const c = await caller('geo');
    const tx = c.transit!.tx;
    tx.connected = false;
    try {
      await expect(c.call('geo.route', route)).rejects.toMatchObject({ type: 'BAD_GATEWAY' });
      expect(c.transit?.pendingRequests.size).toBe(0);
    } finally {
      tx.connected = true;
    }
  });
});

describe('a node that keeps failing', () => {
  it('gets no more calls once its circuit opens; the others take them all', async () => {
    const failing = await node('failing', 'geo', { findArea: 'unavailable' });
    await node('healthy', 'geo', { findArea: 'answer' });
    const c = await caller('geo');
    const outcomes: string[] = [];
    for (let i = 0; i < 40; i++) {
      outcomes.push(
        await c.call('geo.findArea', {}).then(
          () => 'ok',
          () => 'failed',
        ),
      );
    }
    expect(failing.received.findArea).toBe(circuitBreaker('caller').minRequestCount);
    expect(outcomes.slice(-15)).toEqual(Array(15).fill('ok'));
  });
});

describe('which failures are retried, and which count against a node', () => {
  it('retries only calls lost on their way, raised on this node', () => {
    expect(isLostCall({ type: 'REQUEST_REJECTED' })).toBe(true);
    expect(isLostCall({ type: 'BAD_GATEWAY', code: 502 })).toBe(true);
    expect(isLostCall({ type: 'SERVICE_NOT_AVAILABLE' })).toBe(true);
    // Came back from another node, which retried its own calls already.
    expect(isLostCall({ type: 'REQUEST_REJECTED', nodeID: 'pricing-1' })).toBe(false);
    // The time is up; and the node answered.
    expect(isLostCall({ type: 'REQUEST_TIMEOUT', code: 504 })).toBe(false);
    expect(isLostCall({ type: 'SERVICE_UNAVAILABLE', code: 503 })).toBe(false);
    expect(isLostCall(undefined)).toBe(false);
  });

  it("counts another node's server errors and timeouts against it, nothing else", () => {
    const fails = (err: object) => isNodeFailure(err, 'caller');
    const timeout = (nodeID: string) => ({ type: 'REQUEST_TIMEOUT', code: 504, data: { nodeID } });
    expect(fails(timeout('pricing-1'))).toBe(true);
    expect(fails({ type: 'SERVICE_UNAVAILABLE', code: 503, nodeID: 'pricing-1' })).toBe(true);
    expect(fails({ code: 500, nodeID: 'pricing-1' })).toBe(true);
    expect(fails({ type: 'REQUEST_REJECTED', code: 503, data: { nodeID: 'pricing-1' } })).toBe(
      false,
    );
    expect(fails({ type: 'NOT_FOUND', code: 404, nodeID: 'pricing-1' })).toBe(false);
    // This node's transporter is down: no node's fault.
    expect(fails({ type: 'BAD_GATEWAY', code: 502 })).toBe(false);
    // A refusal for load says when to come back: the node is protecting itself.
    expect(fails({ ...serviceBusy('All upload slots are taken', 5), nodeID: 'file-1' })).toBe(
      false,
    );
    // This node's own failures (its database is down): its own circuit stays closed.
    expect(fails(serviceUnavailable('The database is unavailable'))).toBe(false);
    expect(fails(timeout('caller'))).toBe(false);
  });

  it('repeats safe actions, keyed ones only with their token, others never', () => {
    expect(retriesFor('safe')).toBe(SAFE_RETRIES);
    expect(retriesFor('keyed', { idempotencyToken: 't' })).toBe(SAFE_RETRIES);
    expect(retriesFor('keyed', {})).toBe(0);
    expect(retriesFor('never', { idempotencyToken: 't' })).toBe(0);
  });
});

describe('stopAndExit', () => {
  const logger = { error: () => undefined } as unknown as ServiceBroker['logger'];

  it('exits 0 once the broker has stopped', async () => {
    const codes: number[] = [];
    await stopAndExit({ logger, stop: async () => undefined }, (code) => codes.push(code), 1_000);
    expect(codes).toEqual([0]);
  });

  it('exits 1 when the broker has not stopped within the grace period', async () => {
    const codes: number[] = [];
    void stopAndExit(
      { logger, stop: () => new Promise(() => undefined) },
      (code) => codes.push(code),
      20,
    );
    await until(() => codes.length > 0);
    expect(codes).toEqual([1]);
  });
});

describe('whenStopping', () => {
  it('runs as the stop begins, before moleculer waits for the calls in flight', async () => {
    await node('slow', 'pricing', { route: 'hang' });
    const gateway = await caller('pricing');
    const events: string[] = [];
    // What a stream's end does: the request waiting on it finishes.
    whenStopping(gateway, () => {
      events.push('stopping');
      for (const answer of hanging.splice(0)) answer();
    });
    const inFlight = gateway.call('pricing.route', route).then(
      () => events.push('answered'),
      () => events.push('failed'),
    );
    await until(() => hanging.length === 1);
    // Run after the wait instead, the handler would find the call failed at its timeout.
    await gateway.stop();
    await inFlight;
    expect(events).toEqual(['stopping', 'answered']);
  });
});

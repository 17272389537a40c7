import type { ServiceBroker } from 'moleculer';

/** A dependency of this process: whether it is up. */
export type HealthCheck = () => boolean | Promise<boolean>;

export interface HealthCheckOptions {
  /**
   * Whether the process is not ready while the dependency is down (the default). A process
   * that still answers every request without it, better than a load balancer would (our error
   * envelope rather than its own 503), and whose replicas would all fail together, sets false:
   * the dependency is then reported (`degraded`, `waybill_dependency_up`) without taking the
   * process out of its Service.
   */
  required?: boolean;
}

/** A broker's dependencies. */
interface Health {
  checks: Map<string, HealthCheck>;
  /** The names of the dependencies (checks, `transporter`) that do not decide readiness. */
  optional: Set<string>;
}

const healthByBroker = new WeakMap<ServiceBroker, Health>();

function healthOf(broker: ServiceBroker): Health {
  let health = healthByBroker.get(broker);
  if (!health) {
    health = { checks: new Map(), optional: new Set() };
    healthByBroker.set(broker, health);
  }
  return health;
}

export function registerHealthCheck(
  broker: ServiceBroker,
  name: string,
  check: HealthCheck,
  options: HealthCheckOptions = {},
) {
  const { checks, optional } = healthOf(broker);
  checks.set(name, check);
  if (options.required === false) optional.add(name);
  else optional.delete(name);
}

export function unregisterHealthCheck(broker: ServiceBroker, name: string) {
  const health = healthByBroker.get(broker);
  health?.checks.delete(name);
  health?.optional.delete(name);
}

/**
 * The transporter's connection, once the broker has started (which needs it), no longer
 * decides readiness: it is reported as degraded while it is down (the gateway, docs/operations.md).
 */
export function readyWithoutTransporter(broker: ServiceBroker) {
  healthOf(broker).optional.add('transporter');
}

export interface Readiness {
  ready: boolean;
  /** Each dependency, the broker's own start included: whether it is up. */
  checks: Record<string, boolean>;
  /** The dependencies down that do not make the process unready: it serves, with less. */
  degraded: string[];
}

/**
 * Ready means: the broker and every local service started, the transporter (when used and
 * required) connected, and every required dependency (MongoDB, Redis, ...) answers.
 */
export async function readiness(broker: ServiceBroker): Promise<Readiness> {
  const checks: Record<string, boolean> = { broker: broker.started && !broker.stopping };
  if (broker.transit) checks.transporter = broker.transit.connected && broker.transit.isReady;
  const { checks: registered, optional } = healthOf(broker);
  await Promise.all(
    [...registered].map(async ([name, check]) => {
      try {
        checks[name] = await check();
      } catch {
        checks[name] = false;
      }
    }),
  );
  const down = Object.keys(checks).filter((name) => !checks[name]);
  return {
    ready: down.every((name) => optional.has(name)),
    checks,
    degraded: down.filter((name) => optional.has(name)),
  };
}

/** The dependencies whose being down makes the process unready. */
export const failing = (state: Readiness): string[] =>
  Object.keys(state.checks).filter((name) => !state.checks[name] && !state.degraded.includes(name));

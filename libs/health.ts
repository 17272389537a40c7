import type { ServiceBroker } from 'moleculer';

/** A dependency of this process that must be up for it to serve traffic. */
export type HealthCheck = () => boolean | Promise<boolean>;

const checksByBroker = new WeakMap<ServiceBroker, Map<string, HealthCheck>>();

export function registerHealthCheck(broker: ServiceBroker, name: string, check: HealthCheck) {
  let checks = checksByBroker.get(broker);
  if (!checks) {
    checks = new Map();
    checksByBroker.set(broker, checks);
  }
  checks.set(name, check);
}

export function unregisterHealthCheck(broker: ServiceBroker, name: string) {
  checksByBroker.get(broker)?.delete(name);
}

export interface Readiness {
  ready: boolean;
  checks: Record<string, boolean>;
}

/**
 * Ready means: the broker and every local service started, the transporter (when used)
 * connected, and every registered dependency (MongoDB, Redis, ...) answers.
 */
export async function readiness(broker: ServiceBroker): Promise<Readiness> {
  const checks: Record<string, boolean> = { broker: broker.started && !broker.stopping };
  if (broker.transit) checks.transporter = broker.transit.connected && broker.transit.isReady;
  const registered = checksByBroker.get(broker) ?? new Map<string, HealthCheck>();
  await Promise.all(
    [...registered].map(async ([name, check]) => {
      try {
        checks[name] = await check();
      } catch {
        checks[name] = false;
      }
    }),
  );
  return { ready: Object.values(checks).every(Boolean), checks };
}

import { answerWithin } from './at-once';
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

/**
 * How long readiness waits for one dependency's check: under the probes' 3 s timeout
 * (deploy/k8s), so that a slow dependency (S3 answering in 4 s) is a 503 naming it, not a
 * probe that times out with nothing said.
 */
export const CHECK_DEADLINE_MS = 2_000;

/** A broker's dependencies. */
interface Health {
  checks: Map<string, HealthCheck>;
  /** The names of the dependencies (checks, `transporter`) that do not decide readiness. */
  optional: Set<string>;
  /**
   * Each check still under way: a probe or scrape that comes meanwhile waits for it rather than
   * starting another beside it (a dependency that hangs is not asked once a probe).
   */
  running: Map<string, { answer: Promise<boolean>; startedAt: number }>;
}

/**
 * A check under way for this many deadlines is not waited for any more: the next probe asks
 * afresh, so that one that never answers does not keep its dependency down once it is back.
 */
const DEADLINES_BEFORE_ABANDONED = 5;

const healthByBroker = new WeakMap<ServiceBroker, Health>();

function healthOf(broker: ServiceBroker): Health {
  let health = healthByBroker.get(broker);
  if (!health) {
    health = { checks: new Map(), optional: new Set(), running: new Map() };
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
export async function readiness(
  broker: ServiceBroker,
  deadlineMs = CHECK_DEADLINE_MS,
): Promise<Readiness> {
  const checks: Record<string, boolean> = { broker: broker.started && !broker.stopping };
  if (broker.transit) checks.transporter = broker.transit.connected && broker.transit.isReady;
  const health = healthOf(broker);
  const { checks: registered, optional } = health;
  await Promise.all(
    [...registered].map(async ([name, check]) => {
      checks[name] = await checkWithin(health, name, check, deadlineMs);
    }),
  );
  const down = Object.keys(checks).filter((name) => !checks[name]);
  return {
    ready: down.every((name) => optional.has(name)),
    checks,
    degraded: down.filter((name) => optional.has(name)),
  };
}

/** A check's answer, or false when it fails or takes longer than `deadlineMs`. */
async function checkWithin(
  health: Health,
  name: string,
  check: HealthCheck,
  deadlineMs: number,
): Promise<boolean> {
  let running = health.running.get(name);
  if (!running || Date.now() - running.startedAt > DEADLINES_BEFORE_ABANDONED * deadlineMs) {
    const answer = (async () => (await check()) === true)().catch(() => false);
    const started = { answer, startedAt: Date.now() };
    void answer.finally(() => {
      if (health.running.get(name) === started) health.running.delete(name);
    });
    health.running.set(name, started);
    running = started;
  }
  return answerWithin(running.answer, deadlineMs, false);
}

/** The dependencies whose being down makes the process unready. */
export const failing = (state: Readiness): string[] =>
  Object.keys(state.checks).filter((name) => !state.checks[name] && !state.degraded.includes(name));

import os from 'node:os';
import type { BrokerOptions, MetricRegistry } from 'moleculer';
import { withCallMetrics } from './libs/call-metrics';
import { forCalls } from './libs/entry-points';
import { MAX_TIMER_MS, type Config } from './libs/config';
import { BufferedConsoleLogger, type BufferedConsoleOptions } from './libs/log-output';
import { capabilitiesHidden, jsonLogLine } from './libs/logging';
import { NatsTransporter } from './libs/nats-transporter';
import { OpsServer } from './libs/ops-server';
import {
  HEARTBEAT,
  RETRY_POLICY,
  circuitBreaker,
  remoteCalls,
  stoppingHooks,
} from './libs/resilience';
import { JoiValidator } from './libs/validation';

/**
 * Broker settings for every process. With NATS_URL unset, all services share one process
 * and call each other in memory; with it set, the same code runs over NATS, whether one
 * process holds every service or each service has its own.
 */
type MetricsReporter = MetricRegistry.MetricsReporter;

/** Whether NATS_URL names its server by `tls://`. */
const natsWantsTls = (natsUrl: string) => new URL(natsUrl).protocol === 'tls:';

/**
 * Moleculer's console logger, its lines written a turn at a time (libs/log-output), as
 * LOG_FORMAT and LOG_LEVEL say; `overrides` for a process other than a service's (the CLI).
 */
export function consoleLogger(
  config: Config,
  overrides: Pick<BufferedConsoleOptions, 'level' | 'everyLineTo' | 'keepBelowLevel'> = {},
): BufferedConsoleLogger {
  return new BufferedConsoleLogger({
    level: config.logLevel,
    formatter:
      config.logFormat === 'json'
        ? (level: string, args: unknown[], bindings: Record<string, unknown>) => [
            jsonLogLine(level, args, bindings),
          ]
        : 'short',
    colors: config.logFormat === 'pretty',
    moduleColors: false,
    conceal: capabilitiesHidden({ references: config.payment.provider === 'sandbox' }),
    ...overrides,
  });
}

export function createBrokerOptions(config: Config): BrokerOptions {
  const nodeID = config.nodeId ?? `${os.hostname()}-${process.pid}`;
  return {
    namespace: config.namespace,
    nodeID,
    // Signals are bin/server.ts's (a stop bounded by STOP_GRACE_MS, its exit code) and the
    // CLI's: moleculer's own handler stopped the broker a second time beside it, both stops
    // running every service's `stopped` at once, then exited 0 whatever the first meant to.
    skipProcessEventRegistration: true,
    transporter: config.natsUrl
      ? new NatsTransporter({
          url: config.natsUrl,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 500,
          // A connection that stops answering (not closed, e.g. a network partition) counts
          // as lost after 2 unanswered pings 5 s apart, not the client's default 4 minutes.
          pingInterval: 5_000,
          maxPingOut: 2,
          // moleculer hands the client only each URL's host and credentials, and the client
          // does not take `tls://` to mean TLS: without this, credentials go in the clear to a
          // server that does not demand TLS.
          ...(natsWantsTls(config.natsUrl) ? { tls: {} } : {}),
        })
      : null,
    // JSON, measured against moleculer's binary serializers (decision 59). Every node must
    // use the same; file bodies do not cross the transporter (libs/transfer).
    serializer: 'JSON',
    logger: consoleLogger(config),
    // Lost nodes and failing ones, docs/resilience.md: a call is retried only as its action's
    // retry kind allows (libs/contracts/retry), and never beyond its timeout.
    requestTimeout: config.requestTimeoutMs,
    retryPolicy: RETRY_POLICY,
    circuitBreaker: circuitBreaker(nodeID),
    ...HEARTBEAT,
    // moleculer's call metrics counted in our own table (libs/call-metrics, decision 64).
    internalMiddlewares: false,
    // HTTP requests' way in passes only some of them (libs/entry-points, decision 83). The
    // stopping hooks last: their `stopping` then runs first, before any wait for contexts.
    middlewares: [...forCalls(withCallMetrics([remoteCalls])), stoppingHooks],
    registry: { strategy: 'RoundRobin', preferLocal: true },
    // Longer than the stop's own budget (libs/resilience, stopAndExit), which is to give up
    // first; never past the longest timer, which would fire at once.
    tracking: {
      enabled: true,
      shutdownTimeout: Math.min(config.stopGraceMs + 5_000, MAX_TIMER_MS),
    },
    validator: new JoiValidator({}),
    errorHandler(err) {
      throw err;
    },
    metrics: {
      enabled: config.opsPort > 0,
      // moleculer accepts reporter instances; its option type only lists option objects.
      reporter:
        config.opsPort > 0
          ? [new OpsServer({ port: config.opsPort }) as unknown as MetricsReporter]
          : [],
    },
  };
}

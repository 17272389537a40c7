import os from 'node:os';
import type { BrokerOptions, MetricRegistry } from 'moleculer';
import type { Config } from './libs/config';
import { jsonLogLine } from './libs/logging';
import { OpsServer } from './libs/ops-server';
import { WaybillSerializer } from './libs/serializer';
import { JoiValidator } from './libs/validation';

/**
 * Broker settings for every process. With NATS_URL unset, all services share one process
 * and call each other in memory; with it set, the same code runs over NATS, whether one
 * process holds every service or each service has its own.
 */
type MetricsReporter = MetricRegistry.MetricsReporter;

export function createBrokerOptions(config: Config): BrokerOptions {
  return {
    namespace: config.namespace,
    nodeID: config.nodeId ?? `${os.hostname()}-${process.pid}`,
    transporter: config.natsUrl
      ? { type: 'NATS', options: { url: config.natsUrl, maxReconnectAttempts: -1 } }
      : null,
    // JSON, with stream chunks (file bodies) as raw bytes instead of arrays of numbers.
    serializer: new WaybillSerializer(),
    logger: {
      type: 'Console',
      options: {
        level: config.logLevel,
        formatter:
          config.logFormat === 'json'
            ? (level: string, args: unknown[], bindings: Record<string, unknown>) => [
                jsonLogLine(level, args, bindings),
              ]
            : 'short',
        colors: config.logFormat === 'pretty',
        moduleColors: false,
      },
    },
    requestTimeout: config.requestTimeoutMs,
    // Retrying is each caller's decision: not every action is idempotent.
    retryPolicy: { enabled: false },
    circuitBreaker: { enabled: false },
    registry: { strategy: 'RoundRobin', preferLocal: true },
    tracking: { enabled: true, shutdownTimeout: 10_000 },
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

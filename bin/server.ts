#!/usr/bin/env node
import { ServiceBroker } from 'moleculer';
import { createBrokerOptions } from '../moleculer.config';
import { ConfigError, loadConfig, type Config } from '../libs/config';
import { jsonLogLine } from '../libs/logging';
import { stopAndExit } from '../libs/resilience';
import { unsupportedNode } from '../libs/runtime';
import { createServices } from '../services';

/**
 * A line on why the process cannot start, before its logger exists: as the logs' own JSON
 * lines (a log pipeline reads no other), or plain text under LOG_FORMAT=pretty.
 */
function fatal(message: string, err?: unknown): void {
  const why = err === undefined ? '' : `: ${err instanceof Error ? err.message : String(err)}`;
  const text = `waybill: ${message}${why}`;
  if (process.env.LOG_FORMAT === 'pretty') console.error(text);
  else console.error(jsonLogLine('fatal', err instanceof Error ? [text, err] : [text], {}));
}

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      fatal(`invalid configuration: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
}

async function main() {
  const tooOld = unsupportedNode();
  if (tooOld) {
    fatal(tooOld);
    process.exit(1);
  }
  const config = readConfig();
  const broker = new ServiceBroker(createBrokerOptions(config));
  for (const schema of createServices(config)) broker.createService(schema);

  let stopping = false;
  /** The highest exit code asked for: a fault during a stop begun by a signal exits 1. */
  let exitCode = 0;
  /** Stops as on SIGTERM (requests in progress finish), exiting `code` at least. */
  const stop = async (code = 0) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    await stopAndExit(broker, (exit) => process.exit(Math.max(exitCode, exit)), config.stopGraceMs);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      broker.logger.info(`${signal} received, stopping`);
      void stop();
    });
  }
  // A fault of ours left uncaught: logged as the JSON line it is, and the process stops as it
  // does on SIGTERM, its requests in progress finishing and its peers told it leaves, exiting
  // 1 for the orchestrator to start it again. Node's own end was a bare stack trace, at once.
  for (const [event, what] of [
    ['unhandledRejection', 'unhandled rejection'],
    ['uncaughtException', 'uncaught exception'],
  ] as const) {
    process.on(event, (err: unknown) => {
      broker.logger.error(`${what}; stopping`, err instanceof Error ? err : { err: String(err) });
      void stop(1);
    });
  }

  await broker.start();
  broker.logger.info('waybill started', {
    services: config.services,
    transporter: config.natsUrl ? 'NATS' : 'none (in-process)',
    environment: config.appEnv,
  });
}

main().catch((err: unknown) => {
  fatal('failed to start', err);
  process.exit(1);
});

#!/usr/bin/env node
import { ServiceBroker } from 'moleculer';
import { createBrokerOptions } from '../moleculer.config';
import { ConfigError, loadConfig, type Config } from '../libs/config';
import { stopAndExit } from '../libs/resilience';
import { unsupportedNode } from '../libs/runtime';
import { createServices } from '../services';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`waybill: invalid configuration: ${err.message}`);
      process.exit(1);
    }
    throw err;
  }
}

async function main() {
  const tooOld = unsupportedNode();
  if (tooOld) {
    console.error(`waybill: ${tooOld}`);
    process.exit(1);
  }
  const config = readConfig();
  const broker = new ServiceBroker(createBrokerOptions(config));
  for (const schema of createServices(config)) broker.createService(schema);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    broker.logger.info(`${signal} received, stopping`);
    await stopAndExit(broker, (code) => process.exit(code), config.stopGraceMs);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await broker.start();
  broker.logger.info('waybill started', {
    services: config.services,
    transporter: config.natsUrl ? 'NATS' : 'none (in-process)',
    environment: config.appEnv,
  });
}

main().catch((err: unknown) => {
  console.error('waybill: failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type mongoose from 'mongoose';
import { ServiceBroker } from 'moleculer';
import { commandBroker } from '../../bin/cli-services';
import { Periodic } from '../../libs/periodic';
import { LocationFlusher } from '../../services/courier-matching/location-flusher';
import { loadConfig } from '../../libs/config';
import { toServiceSchema } from '../../libs/service';
import { serviceDefinition } from '../../services/catalog';
import { createBrokerOptions } from '../../moleculer.config';
import { eventually } from '../support/eventually';
import { dropDatabases, isolation, openServiceDatabase } from '../support/stack';

/**
 * The CLI's own broker joins the platform's NATS (decision 137): the platform must not balance
 * its calls or events to a command's services, and those services must not run the platform's
 * sweeps while the command lasts (a checkout sweep in a shell without APP_ENV asks the sandbox
 * provider, which knows no payment, and would expire live checkouts that were paid).
 */
const iso = isolation();
const env = {
  ...process.env,
  NAMESPACE: iso.namespace,
  MONGO_DB_PREFIX: iso.dbPrefix,
  PAYMENT_SWEEP_INTERVAL_MS: '100',
  MATCHING_SWEEP_INTERVAL_MS: '100',
};
// Spied on before the command's services exist: every sweep, sender, retention and pruning run
// is a Periodic, and the couriers' positions have a flusher of their own.
const periodicStarts = jest.spyOn(Periodic.prototype, 'start');
const flusherStarts = jest.spyOn(LocationFlusher.prototype, 'start');
const flushes = jest.spyOn(LocationFlusher.prototype, 'flush');
let command: ServiceBroker;
let platform: ServiceBroker;
let payments: mongoose.Connection;

beforeAll(async () => {
  payments = await openServiceDatabase(iso, 'payment');
  command = commandBroker(
    ['account', 'payment', 'courier-matching', 'order', 'webhook', 'file'],
    env,
  ).broker;
  const platformConfig = loadConfig({ ...env, OPS_PORT: '0' });
  platform = new ServiceBroker({
    ...createBrokerOptions(platformConfig),
    nodeID: `platform-${randomUUID()}`,
    logger: false,
  });
  // The platform's own account service: the first to start records the platform's environment.
  platform.createService(toServiceSchema(serviceDefinition('account', platformConfig)));
  await Promise.all([command.start(), platform.start()]);
}, 60_000);

afterAll(async () => {
  await Promise.all([command?.stop(), platform?.stop()]);
  await payments?.close();
  await dropDatabases(iso);
});

it("answers the command's calls and none of the platform's", async () => {
  const userId = randomUUID();
  await expect(command.call('payment.adminWallet', { userId })).rejects.toMatchObject({
    code: 404,
  });
  // The platform sees the command's node and its services, but none of their actions or
  // events (moleculer's own `$node` aside).
  await eventually(() => {
    const services = platform.registry
      .getServiceList({ onlyLocal: false, withActions: true, withEvents: true })
      .filter((s) => s.nodeID === command.nodeID && s.name !== '$node')
      // The listing has them; its declared type names only `action`.
      .map((s) => s as typeof s & { actions?: object; events?: object });
    expect(services.map((s) => s.name).sort()).toEqual([
      'account',
      'courier-matching',
      'file',
      'order',
      'payment',
      'webhook',
    ]);
    for (const service of services) {
      expect(Object.keys(service.actions ?? {})).toEqual([]);
      expect(Object.keys(service.events ?? {})).toEqual([]);
    }
  });
  await expect(platform.call('payment.adminWallet', { userId })).rejects.toMatchObject({
    name: 'ServiceNotFoundError',
  });
});

it('starts no background work, and flushes no positions as it stops', async () => {
  expect(periodicStarts).not.toHaveBeenCalled();
  expect(flusherStarts).not.toHaveBeenCalled();
  await command.stop();
  expect(flushes).not.toHaveBeenCalled();
  await command.start();
});

it("records the platform's environment as its account service starts", async () => {
  const accounts = await openServiceDatabase(iso, 'account');
  try {
    const recorded = await accounts
      .collection<{ _id: string; appEnv: string }>('deployment')
      .findOne({ _id: 'environment' });
    expect(recorded).toMatchObject({ appEnv: 'staging' });
  } finally {
    await accounts.close();
  }
});

it('runs no sweep while the command lasts', async () => {
  // A checkout left on the sweep's list without its session: a sweep drops it at once.
  const reference = randomUUID();
  const pending = payments.collection<{ _id: string; expiresAt: Date }>('checkout_pending');
  await pending.insertOne({ _id: reference, expiresAt: new Date(Date.now() - 60_000) });
  await sleep(1_000);
  expect(await pending.findOne({ _id: reference })).not.toBeNull();
});

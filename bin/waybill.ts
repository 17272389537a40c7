#!/usr/bin/env node
import { Command, InvalidArgumentError } from 'commander';
import { ServiceBroker } from 'moleculer';
import { createBrokerOptions } from '../moleculer.config';
import {
  ConfigError,
  describeConfig,
  loadConfig,
  type AppEnvironment,
  type Config,
} from '../libs/config';
import { call } from '../libs/contracts';
import { toHttpError } from '../libs/errors';
import { toServiceSchema } from '../libs/service';
import { serviceDefinition } from '../services/catalog';
import { seedDemoData } from '../services/seed';

/**
 * Operator CLI. It runs the services it needs (account; payment for wallets) in its own
 * short-lived broker (joined to NATS when NATS_URL is set, so revocations reach running
 * gateways) and calls the same actions as the admin API.
 */
async function withServices<T>(
  names: ('account' | 'payment')[],
  run: (broker: ServiceBroker, config: Config) => Promise<T>,
) {
  const config = loadConfig({ ...process.env, OPS_PORT: '0', SERVICES: names.join(',') });
  const broker = new ServiceBroker({
    ...createBrokerOptions(config),
    nodeID: `cli-${process.pid}`,
    logger: false,
  });
  for (const name of names) broker.createService(toServiceSchema(serviceDefinition(name, config)));
  await broker.start();
  try {
    return await run(broker, config);
  } finally {
    await broker.stop();
  }
}

const withAccount = <T>(run: (broker: ServiceBroker, config: Config) => Promise<T>) =>
  withServices(['account'], run);
const withWallets = <T>(run: (broker: ServiceBroker) => Promise<T>) =>
  withServices(['account', 'payment'], run);

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

const program = new Command('waybill')
  .description('Waybill operator CLI: users, API keys, wallets and demo data')
  .showHelpAfterError()
  .addHelpText(
    'after',
    '\nConfiguration comes from the environment (see `waybill config`); MONGO_URL is required.',
  );

program
  .command('users:create')
  .description('create a user')
  .requiredOption('--name <name>', 'full name')
  .requiredOption('--email <email>', 'e-mail, unique')
  .requiredOption(
    '--phone <phone>',
    'a phone number that exists, in E.164 form, like +2348012345678',
  )
  .action((opts: { name: string; email: string; phone: string }) =>
    withAccount((broker) => call(broker, 'account.createUser', opts)).then(print),
  );

program
  .command('users:get')
  .description('show a user')
  .argument('<userId>', 'user id (UUID)')
  .action((userId: string) =>
    withAccount((broker) => call(broker, 'account.getUser', { userId })).then(print),
  );

program
  .command('users:find')
  .description('list users, newest first')
  .option('--email <email>', 'only the user with this e-mail')
  .action((opts: { email?: string }) =>
    withAccount((broker) => call(broker, 'account.findUsers', opts)).then(print),
  );

program
  .command('keys:create')
  .description('create an API key; the key is printed once')
  .argument('<userId>', 'owner (UUID)')
  .option('--environment <env>', 'staging or live (default: APP_ENV)')
  .option(
    '--browser',
    'a client-app (publishable) key: /file only, from apps and browsers (serverOnly: false)',
  )
  .option('--quota-limit <n>', 'own quota: requests per window', positiveInt)
  .option('--quota-window <seconds>', 'own quota: window length in seconds', positiveInt, 60)
  .action(
    (
      userId: string,
      opts: { environment?: string; browser?: boolean; quotaLimit?: number; quotaWindow: number },
    ) =>
      withAccount((broker) =>
        call(broker, 'account.createApiKey', {
          userId,
          // Any other word is refused by the action's validator, with a message naming it.
          ...(opts.environment ? { environment: opts.environment as AppEnvironment } : {}),
          serverOnly: !opts.browser,
          ...(opts.quotaLimit
            ? { quota: { limit: opts.quotaLimit, windowSeconds: opts.quotaWindow } }
            : {}),
        }),
      ).then(print),
  );

program
  .command('keys:list')
  .description("list a user's API keys (never the keys themselves)")
  .argument('<userId>', 'owner (UUID)')
  .action((userId: string) =>
    withAccount((broker) => call(broker, 'account.listApiKeys', { userId })).then(print),
  );

program
  .command('keys:revoke')
  .description('revoke an API key')
  .argument('<keyId>', 'key id (UUID)')
  .action((keyId: string) =>
    withAccount((broker) => call(broker, 'account.revokeApiKey', { keyId })).then(() =>
      console.log(`revoked ${keyId}`),
    ),
  );

const wallet = program.command('wallet').description("users' wallets");

wallet
  .command('credit')
  .description("credit a user's wallet, once per reference")
  .argument('<userId>', 'owner (UUID)')
  .requiredOption('--amount <naira>', 'NGN, at most two decimals', Number)
  .requiredOption(
    '--reference <reference>',
    'yours, unique per credit: repeating it credits nothing more',
  )
  .action((userId: string, opts: { amount: number; reference: string }) =>
    withWallets((broker) => broker.call('payment.adminCredit', { userId, ...opts })).then(print),
  );

wallet
  .command('show')
  .description("show a user's wallet")
  .argument('<userId>', 'owner (UUID)')
  .action((userId: string) =>
    withWallets((broker) => broker.call('payment.adminWallet', { userId })).then(print),
  );

program
  .command('ledger')
  .description('the wallets’ ledger')
  .command('verify')
  .description('recompute every wallet from its entries; exits 2 when a problem is found')
  .action(() =>
    withWallets((broker) => broker.call('payment.verifyLedger', {})).then((report) => {
      print(report);
      if (!(report as { clean: boolean }).clean) process.exitCode = 2;
    }),
  );

program
  .command('seed')
  .description('create the demo user, fund its wallet and print a staging API key (once)')
  .action(() =>
    withWallets((broker) => seedDemoData(broker)).then((lines) =>
      lines.forEach((l) => console.log(l)),
    ),
  );

program
  .command('config')
  .description('list every environment variable with its default and meaning')
  .action(() => {
    for (const v of describeConfig()) {
      console.log(`${v.name.padEnd(24)} ${(v.default || '-').padEnd(28)} ${v.description}`);
    }
  });

program.parseAsync().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(`waybill: invalid configuration: ${err.message}`);
  } else {
    const { message, errors } = toHttpError(err);
    console.error(`waybill: ${message}`);
    for (const e of errors ?? []) console.error(`  - ${e.field}: ${e.message}`);
  }
  process.exit(1);
});

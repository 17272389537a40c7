#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from 'commander';
import { readFile } from 'node:fs/promises';
import { Errors, ServiceBroker } from 'moleculer';
import {
  ConfigError,
  describeConfig,
  loadConfig,
  type Config,
  type ServiceName,
} from '../libs/config';
import { call } from '../libs/contracts';
import { badRequest, serviceUnavailable, toHttpError } from '../libs/errors';
import { mongoHosts } from '../libs/mongo';
import {
  DEFAULT_TOLERANCE_SECONDS,
  SIGNATURE_HEADER,
  verifySignature,
} from '../libs/webhook-signature';
import {
  CLI_VARIABLES,
  CLI_VARIABLE_MEANINGS,
  cliBrokerOptions,
  commandBroker,
  refuseOtherEnvironment,
  stopOnSignal,
} from './cli-services';
import { DELIVERY_STATUSES } from '../services/order/lifecycle';
import { PROVIDER_LIST_PAGE } from '../services/payment/schemas';
import { PAYER_REFUND_STATES } from '../services/payment/checkout-store';
import { FILE_LIST_MAX } from '../services/file/schemas';
import type { PurgedFiles } from '../services/file/stored-files';
import { ownerOfKey, parseHostedUrl } from '../libs/contracts/file';
import { refuseSeedIn, seedDemoData } from '../services/seed';

/**
 * Operator CLI. It runs the services it needs (account; payment for wallets; geo and
 * courier-matching for couriers) in its own short-lived broker (joined to NATS when NATS_URL
 * is set, so revocations reach running gateways) and calls the same actions as the admin API.
 * Those services answer only the command and do no background work (`forTheCommandOnly`).
 */
async function withServices<T>(
  names: Exclude<ServiceName, 'gateway'>[],
  run: (broker: ServiceBroker, config: Config) => Promise<T>,
) {
  const { broker, config } = commandBroker(names);
  const interruptible = stopOnSignal(broker);
  await startWithin(broker, config, { before: () => refuseOtherEnvironment(config) }).catch(
    async (err: unknown) => {
      await interruptible(); // a signal's stop, then its exit, rather than this error
      throw err;
    },
  );
  try {
    return await run(broker, config);
  } finally {
    await (interruptible() ?? broker.stop());
  }
}

/** How long a command that starts no service of its own waits for NATS. */
const NATS_ONLY_WAIT_SECONDS = 10;

/**
 * Starts the broker, or says which server did not answer: a service waits for its database
 * (and the broker for NATS) until it answers, which for a command run by hand is a silent hang.
 * With services here, one try at MongoDB (`MONGO_TIMEOUT_MS`) and a few seconds more; with none
 * (`withPlatform`), NATS alone is waited for and named.
 */
async function startWithin(
  broker: ServiceBroker,
  config: Config,
  {
    database = true,
    before,
  }: {
    database?: boolean;
    /** What must pass before any service starts (within the same wait). */
    before?: () => Promise<void>;
  } = {},
): Promise<void> {
  const seconds = database ? Math.ceil(config.mongoTimeoutMs / 1000) + 5 : NATS_ONLY_WAIT_SECONDS;
  // `before` reads MongoDB: once it passed, MongoDB answered, and is not the one to blame.
  let databaseAnswered = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const servers =
        database && !databaseAnswered
          ? [`MongoDB at ${mongoHosts(config.mongoUrl)} (MONGO_URL)`]
          : [];
      // Its credentials left out, as MongoDB's are.
      if (config.natsUrl)
        servers.push(`NATS at ${config.natsUrl.replace(/\/\/[^@/]*@/g, '//')} (NATS_URL)`);
      const why =
        servers.length > 0
          ? `${servers.join(' or ')} does not answer. Start it, or point the variable at the platform's (see \`waybill config\`; for the local one, \`eval "$(scripts/infra env)"\`)`
          : 'MongoDB answered, and they are still starting: give the command more CPU (the toolbox pod’s CPU request), or run it again';
      reject(serviceUnavailable(`the services did not start within ${seconds} s: ${why}`));
    }, seconds * 1000);
  });
  try {
    const starting = async () => {
      await before?.();
      databaseAnswered = before !== undefined;
      await broker.start();
    };
    await Promise.race([starting(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

const withAccount = <T>(run: (broker: ServiceBroker, config: Config) => Promise<T>) =>
  withServices(['account'], run);
const withWallets = <T>(run: (broker: ServiceBroker) => Promise<T>) =>
  withServices(['account', 'payment'], run);
/** Geo checks fleet types: only commands that set one need it (it loads the gazetteer). */
const withCouriers = <T>(
  run: (broker: ServiceBroker, config: Config) => Promise<T>,
  options = { geo: false },
) =>
  withServices(
    options.geo ? ['account', 'geo', 'courier-matching'] : ['account', 'courier-matching'],
    run,
  );

/** A courier's cash account: the directory says the courier exists, payment keeps the ledger. */
const withCourierCash = <T>(run: (broker: ServiceBroker) => Promise<T>) =>
  withServices(['account', 'courier-matching', 'payment'], run);

const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));

/**
 * A revocation is announced to running gateways over NATS; without NATS_URL the command's
 * broker is its own and nobody hears it: each gateway goes on accepting `what` until its cache
 * of it expires. Said, since the revocation itself was made.
 */
function warnGatewaysNotTold(config: Config, what: string, cacheSeconds: number): void {
  if (config.natsUrl) return;
  console.error(
    `waybill: NATS_URL is not set, so no running gateway was told: each accepts ${what} until its cache of it expires (up to ${cacheSeconds} s). Set NATS_URL and NAMESPACE to the platform's to revoke at once`,
  );
}

const positiveInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
};

/**
 * `--amount`: naira as written on a receipt, digits with at most two decimals. `Number` would
 * take `0x1f4` for 500 and `1e3` for 1000 on a real money move.
 */
const naira = (value: string) => {
  if (!/^\d+(\.\d{1,2})?$/.test(value)) {
    throw new InvalidArgumentError(
      'must be naira with at most 2 decimal places, like 1500 or 1500.50',
    );
  }
  return Number(value);
};

const nonNegativeInt = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be 0 or more');
  return n;
};

/** `--limit` (`what` per page, at most `max`), as every listing takes it. */
const limited = (
  command: Command,
  what: string,
  { max, byDefault }: { max: number; byDefault: number },
): Command =>
  command.option('--limit <n>', `${what} per page (at most ${max})`, positiveInt, byDefault);

/** A list command's `--limit` and `--offset`. */
function paged(command: Command, what: string, page: { max: number; byDefault: number }): Command {
  return limited(command, what, page).option('--offset <n>', `${what} to skip`, nonNegativeInt, 0);
}

const program = new Command('waybill')
  .description(
    'Waybill operator CLI: users, API keys, operator tokens, wallets, couriers, deliveries, files, webhook signatures and demo data',
  )
  .showHelpAfterError()
  .addHelpText(
    'after',
    [
      '',
      'Configuration comes from the environment, as the services take it (see `waybill config`):',
      "set MONGO_URL, REDIS_URL and NATS_URL to the platform's (for the local one, run",
      '`eval "$(scripts/infra env)"` first); without NATS_URL revocations do not reach running',
      'gateways, and `deliveries`, which act through the running platform, do not work.',
      `${CLI_VARIABLES.operator} names who runs a command: its logs and records say cli:<${CLI_VARIABLES.operator}>.`,
    ].join('\n'),
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

paged(
  program
    .command('users:find')
    .description('list users, newest first')
    .option('--email <email>', 'only the user with this e-mail'),
  'users',
  { max: 100, byDefault: 50 },
).action((opts: { email?: string; limit: number; offset: number }) =>
  withAccount((broker) => call(broker, 'account.findUsers', opts)).then(print),
);

program
  .command('keys:create')
  .description('create an API key of APP_ENV’s environment; the key is printed once')
  .argument('<userId>', 'owner (UUID)')
  .option(
    '--browser',
    'a client-app (publishable) key: /file only, from apps and browsers (serverOnly: false)',
  )
  .option('--quota-limit <n>', 'own quota: requests per window', positiveInt)
  .option(
    '--quota-window <seconds>',
    'own quota: window length in seconds, with --quota-limit (default 60)',
    positiveInt,
  )
  .action(
    (userId: string, opts: { browser?: boolean; quotaLimit?: number; quotaWindow?: number }) => {
      if (opts.quotaWindow !== undefined && opts.quotaLimit === undefined) {
        throw badRequest('--quota-window needs --quota-limit: the window of which quota?');
      }
      return withAccount((broker) =>
        call(broker, 'account.createApiKey', {
          userId,
          serverOnly: !opts.browser,
          ...(opts.quotaLimit
            ? { quota: { limit: opts.quotaLimit, windowSeconds: opts.quotaWindow ?? 60 } }
            : {}),
        }),
      ).then(print);
    },
  );

paged(
  program
    .command('keys:list')
    .description("list a user's API keys, newest first (never the keys themselves)")
    .argument('<userId>', 'owner (UUID)'),
  'keys',
  { max: 500, byDefault: 100 },
).action((userId: string, opts: { limit: number; offset: number }) =>
  withAccount((broker) => call(broker, 'account.listApiKeys', { userId, ...opts })).then(print),
);

program
  .command('keys:revoke')
  .description('revoke an API key')
  .argument('<keyId>', 'key id (UUID)')
  .action((keyId: string) =>
    withAccount(async (broker, config) => {
      await call(broker, 'account.revokeApiKey', { keyId });
      warnGatewaysNotTold(config, 'the key', config.apiKeyCacheSeconds);
    }).then(() => console.log(`revoked ${keyId}`)),
  );

const operators = program
  .command('operators')
  .description(
    "operators' own admin tokens: what each holder does is logged and recorded under their name",
  );

operators
  .command('create')
  .description('create an operator token for /admin; the token is printed once')
  .requiredOption('--name <name>', 'who holds it, as the logs and records name them')
  .option('--expires-in-days <n>', 'days until it stops working on its own', positiveInt)
  .action((opts: { name: string; expiresInDays?: number }) =>
    withAccount((broker) => call(broker, 'account.createOperatorToken', opts)).then(print),
  );

paged(
  operators
    .command('list')
    .description('list operator tokens, newest first, revoked ones too (never the tokens)'),
  'tokens',
  { max: 100, byDefault: 50 },
).action((opts: { limit: number; offset: number }) =>
  withAccount((broker) => call(broker, 'account.listOperatorTokens', opts)).then(print),
);

operators
  .command('revoke')
  .description(
    'revoke an operator token: running gateways stop accepting it at once (with NATS_URL set to the platform’s)',
  )
  .argument('<tokenId>', 'the token’s id (UUID), as list shows it')
  .action((tokenId: string) =>
    withAccount(async (broker, config) => {
      await call(broker, 'account.revokeOperatorToken', { operatorTokenId: tokenId });
      warnGatewaysNotTold(config, 'the token', config.apiKeyCacheSeconds);
    }).then(() => console.log(`operator token ${tokenId} revoked`)),
  );

const wallet = program.command('wallet').description("users' wallets");

wallet
  .command('credit')
  .description("credit a user's wallet, once per reference")
  .argument('<userId>', 'owner (UUID)')
  .requiredOption('--amount <naira>', 'NGN, at most two decimals', naira)
  .requiredOption(
    '--reference <reference>',
    'yours, unique per credit: repeating it credits nothing more',
  )
  .option('--note <text>', 'why, shown to the owner as the entry’s description')
  .action((userId: string, opts: { amount: number; reference: string; note?: string }) =>
    withWallets((broker) => broker.call('payment.adminCredit', { userId, ...opts })).then(print),
  );

wallet
  .command('debit')
  .description(
    "take back from a user's wallet what was credited by mistake, once per reference (never below zero)",
  )
  .argument('<userId>', 'owner (UUID)')
  .requiredOption('--amount <naira>', 'NGN, at most two decimals', naira)
  .requiredOption(
    '--reference <reference>',
    'yours, unique per debit: repeating it takes nothing more',
  )
  .requiredOption('--note <text>', 'why, shown to the owner as the entry’s description')
  .action((userId: string, opts: { amount: number; reference: string; note: string }) =>
    withWallets((broker) => broker.call('payment.adminDebit', { userId, ...opts })).then(print),
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
  .description(
    'recompute every wallet from its entries, however long it takes; exits 2 when a problem is found',
  )
  .action(() =>
    // Run here, in the command's own payment service, not on the platform's replicas: the scan
    // grows with the ledger, and is held to no REQUEST_TIMEOUT_MS (GET /admin/ledger/verify is).
    withWallets((broker) => broker.call('payment.verifyLedger', {}, { timeout: 0 })).then(
      (report) => {
        print(report);
        if (!(report as { clean: boolean }).clean) process.exitCode = 2;
      },
    ),
  );

const payments = program
  .command('payments')
  .description(
    'the payment provider’s money: charges no checkout credits (refund each at the provider, then settle it here), refunds made there, taken back from wallets, and refunds we ask there for payers',
  );

/** A list of the provider's money, paged by the id of the last one of the page before. */
function pagedAfter(command: Command, what: string, id: string): Command {
  return limited(command, what, PROVIDER_LIST_PAGE).option(
    `--after <${id}>`,
    'the next page: after the last one of the page before',
  );
}

pagedAfter(
  payments
    .command('uncredited')
    .description('list them, newest first, each with its settlement or null')
    .option('--unsettled', 'only those no operator has settled yet'),
  'payments',
  'providerReference',
).action((opts: { unsettled?: boolean; limit: number; after?: string }) =>
  withWallets((broker) =>
    broker.call('payment.listUncredited', {
      limit: opts.limit,
      ...(opts.after ? { after: opts.after } : {}),
      ...(opts.unsettled ? { settled: false } : {}),
    }),
  ).then(print),
);

pagedAfter(
  payments
    .command('reversals')
    .description(
      'refunds made at the provider and what is taken back of each from the wallet its checkout credited, newest first',
    )
    .option('--open', 'only those still awaiting their credit or owed'),
  'reversals',
  'refundId',
).action((opts: { open?: boolean; limit: number; after?: string }) =>
  withWallets((broker) =>
    broker.call('payment.listReversals', {
      limit: opts.limit,
      ...(opts.after ? { after: opts.after } : {}),
      ...(opts.open ? { open: true } : {}),
    }),
  ).then(print),
);

pagedAfter(
  payments
    .command('payer-refunds')
    .description(
      'refunds asked at the provider for payers (a recipient’s payment no delivery uses), newest first, with where each stands',
    )
    .addOption(
      new Option('--state <state>', 'only those in this state').choices([...PAYER_REFUND_STATES]),
    ),
  'refunds',
  'checkoutReference',
).action((opts: { state?: string; limit: number; after?: string }) =>
  withWallets((broker) =>
    broker.call('payment.listPayerRefunds', {
      limit: opts.limit,
      ...(opts.after ? { after: opts.after } : {}),
      ...(opts.state ? { state: opts.state } : {}),
    }),
  ).then(print),
);

payments
  .command('settle')
  .description('record that one was refunded at the provider, once: the first note stands')
  .argument('<providerReference>', 'as listed')
  .requiredOption('--note <text>', 'what was done: the refund’s reference at the provider')
  .action((providerReference: string, opts: { note: string }) =>
    withWallets((broker) =>
      broker.call('payment.settleUncredited', { providerReference, note: opts.note }),
    ).then(print),
  );

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A fleet type given by id, or by code (`bike`), as its id. */
async function fleetTypeId(broker: ServiceBroker, idOrCode: string): Promise<string> {
  if (UUID.test(idOrCode)) return idOrCode;
  const types = await call(broker, 'geo.listFleetTypes', { activeOnly: false });
  const found = types.find((t) => t.code === idOrCode.toLowerCase());
  if (!found) {
    throw badRequest(
      `--fleet-type: no fleet type with code ${idOrCode}; the codes are ${types.map((t) => t.code).join(', ')}`,
    );
  }
  return found.id;
}

interface FleetOptions {
  fleetType?: string;
  regNo?: string;
  make?: string;
  model?: string;
  colour?: string;
}

/** The fleet fields given on the command line, the fleet type resolved to its id. */
async function fleetOf(broker: ServiceBroker, opts: FleetOptions) {
  const { fleetType, regNo, make, model, colour } = opts;
  const given = { regNo, make, model, colour };
  return {
    ...(fleetType ? { typeId: await fleetTypeId(broker, fleetType) } : {}),
    ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)),
  };
}

const couriers = program
  .command('couriers')
  .description('the courier directory, merchants’ own courier lists and couriers’ cash');

couriers
  .command('add')
  .description('add a courier to the directory')
  .requiredOption('--name <name>', 'full name')
  .requiredOption('--phone <phone>', 'phone in E.164, like +2348031234567')
  .requiredOption('--fleet-type <idOrCode>', 'fleet type: its id, or its code (bike, car, ...)')
  .requiredOption('--reg-no <regNo>', 'vehicle registration number, unique among couriers')
  .requiredOption('--make <make>', 'vehicle make, like Bajaj')
  .requiredOption('--model <model>', 'vehicle model, like Boxer')
  .requiredOption('--colour <colour>', 'vehicle colour')
  .option('--photo <url>', 'profile photo: an https URL, or an uploaded file’s URL')
  .option('--id <courierId>', 'the courier’s profile id, if it has one already (UUID)')
  .option('--inactive', 'add it inactive: no deliveries are offered to it')
  .action(
    (
      opts: FleetOptions & {
        name: string;
        phone: string;
        photo?: string;
        id?: string;
        inactive?: boolean;
      },
    ) =>
      withCouriers(
        async (broker) =>
          broker.call('courier-matching.createCourier', {
            ...(opts.id ? { id: opts.id } : {}),
            name: opts.name,
            phone: opts.phone,
            profilePhoto: opts.photo ?? null,
            fleet: await fleetOf(broker, opts),
            active: !opts.inactive,
          }),
        { geo: true },
      ).then(print),
  );

paged(
  couriers
    .command('list')
    .description('list couriers, newest first')
    .addOption(new Option('--active', 'only active couriers').conflicts('inactive'))
    .option('--inactive', 'only inactive couriers')
    .option('--fleet-type <idOrCode>', 'only couriers of this fleet type (its id, or code: bike)')
    .option('--reg-no <regNo>', 'only the courier with this registration number')
    .option('--virtual', 'only the virtual couriers of simulated deliveries, left out otherwise'),
  'couriers',
  { max: 500, byDefault: 100 },
).action(
  (opts: {
    active?: boolean;
    inactive?: boolean;
    fleetType?: string;
    regNo?: string;
    virtual?: boolean;
    limit: number;
    offset: number;
  }) =>
    withCouriers(
      async (broker) =>
        broker.call('courier-matching.listCouriers', {
          ...(opts.active || opts.inactive ? { active: Boolean(opts.active) } : {}),
          ...(opts.fleetType ? { fleetTypeId: await fleetTypeId(broker, opts.fleetType) } : {}),
          ...(opts.regNo ? { regNo: opts.regNo } : {}),
          ...(opts.virtual ? { virtual: true } : {}),
          limit: opts.limit,
          offset: opts.offset,
        }),
      // A code needs geo to be read; an id does not.
      { geo: opts.fleetType !== undefined && !UUID.test(opts.fleetType) },
    ).then(print),
);

couriers
  .command('show')
  .description('show a courier')
  .argument('<courierId>', 'courier profile id (UUID)')
  .action((courierId: string) =>
    withCouriers((broker) => broker.call('courier-matching.showCourier', { courierId })).then(
      print,
    ),
  );

couriers
  .command('update')
  .description('change a courier: only the options given change')
  .argument('<courierId>', 'courier profile id (UUID)')
  .option('--name <name>', 'full name')
  .option('--phone <phone>', 'phone in E.164')
  .option('--photo <url>', 'profile photo: an https URL, or an uploaded file’s URL')
  .option('--no-photo', 'remove the profile photo')
  .option('--fleet-type <idOrCode>', 'fleet type: its id, or its code (bike, car, ...)')
  .option('--reg-no <regNo>', 'vehicle registration number')
  .option('--make <make>', 'vehicle make')
  .option('--model <model>', 'vehicle model')
  .option('--colour <colour>', 'vehicle colour')
  .addOption(new Option('--active', 'offer it deliveries again').conflicts('inactive'))
  .option('--inactive', 'retire it: no deliveries are offered to it')
  .action(
    (
      courierId: string,
      opts: FleetOptions & {
        name?: string;
        phone?: string;
        photo?: string | boolean;
        active?: boolean;
        inactive?: boolean;
      },
    ) =>
      withCouriers(
        async (broker, config) => {
          const fleet = await fleetOf(broker, opts);
          const updated = await broker.call('courier-matching.updateCourier', {
            courierId,
            ...(opts.name !== undefined ? { name: opts.name } : {}),
            ...(opts.phone !== undefined ? { phone: opts.phone } : {}),
            // `--no-photo` makes it false; with neither option it is undefined.
            ...(typeof opts.photo === 'string' ? { profilePhoto: opts.photo } : {}),
            ...(opts.photo === false ? { profilePhoto: null } : {}),
            ...(Object.keys(fleet).length > 0 ? { fleet } : {}),
            ...(opts.active || opts.inactive ? { active: Boolean(opts.active) } : {}),
          });
          // Retired, its tokens are revoked as `token-revoke` revokes one.
          if (opts.inactive) {
            warnGatewaysNotTold(config, 'its tokens', config.courierTokenCacheSeconds);
          }
          return updated;
        },
        { geo: opts.fleetType !== undefined },
      ).then(print),
  );

couriers
  .command('merchant-add')
  .description('put a courier on a merchant’s own list (MERCHANT_SPECIAL_COURIERS deliveries)')
  .argument('<userId>', 'the merchant: a user id (UUID)')
  .argument('<courierId>', 'courier profile id (UUID)')
  .action((userId: string, courierId: string) =>
    withCouriers((broker) =>
      broker.call('courier-matching.addMerchantCourier', { userId, courierId }),
    ).then(() => console.log(`courier ${courierId} is on the list of user ${userId}`)),
  );

couriers
  .command('merchant-remove')
  .description('take a courier off a merchant’s own list')
  .argument('<userId>', 'the merchant: a user id (UUID)')
  .argument('<courierId>', 'courier profile id (UUID)')
  .action((userId: string, courierId: string) =>
    withCouriers((broker) =>
      broker.call('courier-matching.removeMerchantCourier', { userId, courierId }),
    ).then(() => console.log(`courier ${courierId} is off the list of user ${userId}`)),
  );

couriers
  .command('merchant-list')
  .description('the couriers on a merchant’s own list, oldest addition first')
  .argument('<userId>', 'the merchant: a user id (UUID)')
  .action((userId: string) =>
    withCouriers((broker) => broker.call('courier-matching.listMerchantCouriers', { userId })).then(
      print,
    ),
  );

couriers
  .command('token-create')
  .description('create a token for the courier app; the token is printed once')
  .argument('<courierId>', 'courier profile id (UUID)')
  .action((courierId: string) =>
    withCouriers((broker) =>
      broker.call('courier-matching.createCourierToken', { courierId }),
    ).then(print),
  );

couriers
  .command('token-list')
  .description("list a courier's tokens (never the tokens themselves), newest first")
  .argument('<courierId>', 'courier profile id (UUID)')
  .action((courierId: string) =>
    withCouriers((broker) => broker.call('courier-matching.listCourierTokens', { courierId })).then(
      print,
    ),
  );

couriers
  .command('token-revoke')
  .description(
    'revoke a courier token: running gateways stop accepting it at once (with NATS_URL set to the platform’s)',
  )
  .argument('<tokenId>', 'the token’s id (UUID), as token-list shows it')
  .action((tokenId: string) =>
    withCouriers(async (broker, config) => {
      await broker.call('courier-matching.revokeCourierToken', { tokenId });
      warnGatewaysNotTold(config, 'the token', config.courierTokenCacheSeconds);
    }).then(() => console.log(`courier token ${tokenId} revoked`)),
  );

/** A courier's chain of entries read by `action`, a page at a time (`cash`, `wallet`). */
function courierChainCommand(
  name: string,
  description: string,
  action: 'payment.courierCash' | 'payment.courierWallet',
) {
  couriers
    .command(name)
    .description(description)
    .argument('<courierId>', 'courier profile id (UUID)')
    .option('--limit <n>', 'entries per page, newest first (at most 100)', positiveInt, 20)
    .option(
      '--before <sequence>',
      'only entries older than this sequence (the next page)',
      positiveInt,
    )
    .action((courierId: string, opts: { limit: number; before?: number }) =>
      withCourierCash((broker) => broker.call(action, { courierId, ...opts })).then(print),
    );
}

courierChainCommand(
  'cash',
  'what a courier owes in cash collected on delivery, and the latest entries',
  'payment.courierCash',
);
courierChainCommand(
  'wallet',
  "what was credited to a courier's wallet (COURIER_WALLET pay-on-delivery), newest first",
  'payment.courierWallet',
);

couriers
  .command('remit')
  .description('record cash a courier handed in, once per reference')
  .argument('<courierId>', 'courier profile id (UUID)')
  .requiredOption('--amount <naira>', 'NGN, at most two decimals', naira)
  .requiredOption(
    '--reference <reference>',
    'yours, unique per remittance (a receipt number): repeating it records nothing more',
  )
  .option('--note <text>', 'shown as the entry’s description')
  .action((courierId: string, opts: { amount: number; reference: string; note?: string }) =>
    withCourierCash((broker) =>
      broker.call('payment.courierCashRemittance', { courierId, ...opts }),
    ).then(print),
  );

couriers
  .command('correct-cash')
  .description(
    'take back a remittance recorded too high (debited to the cash account), once per reference',
  )
  .argument('<courierId>', 'courier profile id (UUID)')
  .requiredOption('--amount <naira>', 'NGN, at most two decimals', naira)
  .requiredOption(
    '--reference <reference>',
    'yours, unique per correction: repeating it records nothing more',
  )
  .requiredOption('--note <text>', 'why, shown to the courier as the entry’s description')
  .action((courierId: string, opts: { amount: number; reference: string; note: string }) =>
    withCourierCash((broker) =>
      broker.call('payment.courierCashCorrection', { courierId, ...opts }),
    ).then(print),
  );

/**
 * Runs `run` against the platform's own `service`, over NATS, running none here: a delivery's
 * step carries out its effects through order, payment, package and courier-matching together,
 * and an order service started in this process would also start its sweeps, its outbox sender
 * and, in staging, its courier simulator (decision 122).
 */
async function withPlatform<T>(
  service: Exclude<ServiceName, 'gateway'>,
  run: (broker: ServiceBroker) => Promise<T>,
) {
  // None runs here: the live keys and providers' settings are the platform's, not the command's.
  const config = loadConfig({ ...process.env, OPS_PORT: '0' }, { runs: [] });
  if (!config.natsUrl) {
    throw badRequest(
      `this command acts through the running platform's ${service} service: set NATS_URL to the platform's NATS, and NAMESPACE to its namespace`,
    );
  }
  const broker = new ServiceBroker(cliBrokerOptions(config));
  const interruptible = stopOnSignal(broker);
  await startWithin(broker, config, { database: false }).catch(async (err: unknown) => {
    await interruptible(); // a signal's stop, then its exit, rather than this error
    throw err;
  });
  try {
    const seconds = NATS_ONLY_WAIT_SECONDS;
    await broker.waitForServices([service], seconds * 1000).catch(() => {
      throw serviceUnavailable(
        `no ${service} service answered within ${seconds} s on NATS in namespace "${config.namespace}": is the platform running, and are NATS_URL and NAMESPACE its own?`,
      );
    });
    return await run(broker);
  } finally {
    await (interruptible() ?? broker.stop());
  }
}

const deliveries = program
  .command('deliveries')
  .description(
    'any delivery, and the steps operators record for a courier who cannot (needs NATS_URL: it acts through the running platform)',
  );

deliveries
  .command('show')
  .description('show a delivery, as its creator sees it')
  .argument('<deliveryId>', 'delivery id (UUID)')
  .action((deliveryId: string) =>
    withPlatform('order', (broker) => broker.call('order.adminDelivery', { deliveryId })).then(
      print,
    ),
  );

deliveries
  .command('fail')
  .description(
    'record that a delivery cannot go on, for its courier: before collection it ends FAILED and everything is given back; past it the packages go back to the sender (RETURNING). See docs/deliveries.md',
  )
  .argument('<deliveryId>', 'delivery id (UUID)')
  .requiredOption('--reason <text>', 'why, as the merchant will read it')
  .addOption(
    new Option(
      '--expected-status <status>',
      'the status you decided on (`deliveries show`): refused if the delivery has moved since',
    )
      .choices(DELIVERY_STATUSES)
      .makeOptionMandatory(),
  )
  .action((deliveryId: string, opts: { reason: string; expectedStatus: string }) =>
    withPlatform('order', (broker) =>
      broker.call('order.adminFailDelivery', { deliveryId, ...opts }),
    ).then(print),
  );

deliveries
  .command('returned')
  .description(
    'record that a RETURNING delivery’s packages are back with the sender: it ends RETURNED',
  )
  .argument('<deliveryId>', 'delivery id (UUID)')
  .action((deliveryId: string) =>
    withPlatform('order', (broker) =>
      broker.call('order.adminReturnDelivery', { deliveryId }),
    ).then(print),
  );

const files = program
  .command('files')
  .description('users’ uploaded files: what one stored, a takedown, a purge (docs/files.md)');

const withFiles = <T>(run: (broker: ServiceBroker, config: Config) => Promise<T>) =>
  withServices(['file'], run);

files
  .command('list')
  .description('a user’s files, a page at a time, in name order')
  .argument('<userId>', 'user id (UUID)')
  .option('--limit <n>', `files per page (at most ${FILE_LIST_MAX})`, positiveInt, 100)
  .option('--after <fileName>', 'the page begins after this file: the last of the previous page')
  .action((userId: string, opts: { limit: number; after?: string }) =>
    withFiles((broker) => broker.call('file.listUserFiles', { userId, ...opts })).then(print),
  );

files
  .command('delete')
  .description('take a file down, by its URL; a CDN may serve its cached copy until that expires')
  .argument('<url>', 'the file’s hosted URL, as the upload answered it')
  .action((url: string) =>
    withFiles(async (broker, config) => {
      const parsed = parseHostedUrl(url, config.cdnBaseUrl);
      if (!parsed.ok) throw badRequest(`<url> is not a file hosted here: ${parsed.reason}`);
      const { userId, fileName } = ownerOfKey(parsed.key);
      await broker.call('file.deleteUserFile', { userId, fileName });
      return { deleted: url };
    }).then(print),
  );

files
  .command('purge')
  .description(
    'delete every file of a user; revoke their API keys first, or uploads under way land after it',
  )
  .argument('<userId>', 'user id (UUID)')
  .option('--yes', 'delete them: without it, nothing is deleted and what would be is counted')
  .action((userId: string, opts: { yes?: boolean }) =>
    withFiles(async (broker) => {
      if (!opts.yes) return countPurge(broker, userId);
      let deleted = 0;
      for (;;) {
        // No time limit: a page is up to FILE_LIST_MAX deletes, on an S3 that may be slow; a
        // limit would answer a failure while the deletes went on.
        const page = (await broker
          .call('file.purgeUserFiles', { userId }, { timeout: 0 })
          .catch((err) => {
            // What the failed call deleted is in its `files purged` line above (LOG_LEVEL=info).
            if (deleted > 0) console.error(`waybill: ${deleted} files deleted before this failed`);
            throw err;
          })) as PurgedFiles;
        deleted += page.deleted;
        // Nothing deleted yet more said left: a bucket that lists what it cannot delete.
        if (!page.more || page.deleted === 0) return { userId, deleted, more: page.more };
      }
    }).then((purged) => {
      print(purged);
      if ('wouldDelete' in purged) {
        if (purged.wouldDelete > 0) {
          console.error(
            'waybill: nothing was deleted; a purge deletes these files for good: run it again with --yes',
          );
          process.exitCode = 1;
        }
      } else if (purged.more) {
        console.error(
          "waybill: files are left that the bucket lists but would not delete: check the bucket's permissions and object locks, then run the purge again",
        );
        process.exitCode = 1;
      }
    }),
  );

/**
 * What `files purge` without `--yes` shows: what `--yes` would delete, every object in the
 * user's folder (not only those named as files are), up to a page.
 */
async function countPurge(broker: ServiceBroker, userId: string) {
  try {
    const { count, more } = (await broker.call('file.countPurgeable', { userId })) as {
      count: number;
      more: boolean;
    };
    return { userId, wouldDelete: count, more };
  } catch (err) {
    // File replicas of the version before, during a rollout: their files only, as they counted.
    if (!(err instanceof Errors.ServiceNotFoundError)) throw err;
    const page = (await broker.call('file.listUserFiles', {
      userId,
      limit: FILE_LIST_MAX,
    })) as unknown[];
    return { userId, wouldDelete: page.length, more: page.length === FILE_LIST_MAX };
  }
}

/** The file's bytes as they are, or standard input's for `-`: a signature covers raw bytes. */
async function readBody(path: string): Promise<Buffer> {
  if (path !== '-') {
    return readFile(path).catch((err: NodeJS.ErrnoException) => {
      throw badRequest(`--body-file: cannot read ${path} (${err.code ?? err.message})`);
    });
  }
  // A terminal would be waited on until Ctrl-D, its typing adding a newline the sender never sent.
  if (process.stdin.isTTY) {
    throw badRequest(
      '--body-file -: standard input is a terminal; pipe the raw body in, or name its file',
    );
  }
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

program
  .command('webhooks')
  .description('webhooks sent to integrators')
  .command('verify')
  .description(
    'check the Waybill-Signature of a captured webhook request; prints "valid" (exit 0) or why not (exit 1)',
  )
  .addOption(
    new Option(
      '--secret <secret>',
      "the endpoint's signing secret, whsec_... (from the environment, it stays out of the shell's history and the process list)",
    )
      .env(CLI_VARIABLES.webhookSecret)
      .makeOptionMandatory(),
  )
  .requiredOption('--header <value>', 'the Waybill-Signature header, as received')
  .requiredOption('--body-file <path>', 'the raw request body, byte for byte; - reads stdin')
  .option(
    '--tolerance <seconds>',
    'how far t may be from now',
    nonNegativeInt,
    DEFAULT_TOLERANCE_SECONDS,
  )
  .option(
    '--now <unix>',
    'the time to check against (default: now), for an old capture',
    nonNegativeInt,
  )
  .action(
    async (opts: {
      secret: string;
      header: string;
      bodyFile: string;
      tolerance: number;
      now?: number;
    }) => {
      // A value pasted with its name, as a request dump shows it, is accepted too.
      const header = opts.header.replace(new RegExp(`^\\s*${SIGNATURE_HEADER}\\s*:`, 'i'), '');
      const verdict = verifySignature(header, opts.secret, await readBody(opts.bodyFile), {
        now: opts.now ?? Math.floor(Date.now() / 1000),
        toleranceSeconds: opts.tolerance,
      });
      console.log(verdict.ok ? 'valid' : `invalid: ${verdict.reason}`);
      if (!verdict.ok) process.exitCode = 1;
    },
  );

program
  .command('seed')
  .description(
    'staging only: create the demo user, fund its wallet, add demo couriers and print a staging API key (once)',
  )
  .action(async () => {
    refuseSeedIn(loadConfig(process.env).appEnv);
    const lines = await withServices(['account', 'payment', 'geo', 'courier-matching'], (broker) =>
      seedDemoData(broker),
    );
    lines.forEach((l) => console.log(l));
  });

program
  .command('config')
  .description('list every environment variable with its default and meaning')
  .action(() => {
    for (const v of describeConfig()) {
      console.log(`${v.name.padEnd(24)} ${(v.default || '-').padEnd(28)} ${v.description}`);
    }
    console.log('\nRead by this CLI alone:');
    for (const [name, meaning] of Object.entries(CLI_VARIABLE_MEANINGS)) {
      console.log(`${name.padEnd(24)} ${'-'.padEnd(28)} ${meaning}`);
    }
  });

program.parseAsync().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(`waybill: invalid configuration: ${err.message}`);
  } else {
    const { message, errors, internal } = toHttpError(err);
    // The failure is not in the command's log: "the failure was logged" would send the operator
    // looking for it there.
    // An error of ours names what failed (a database's without its password).
    const said = internal && err instanceof Error && err.message ? err.message : message;
    console.error(`waybill: ${said}`);
    for (const e of errors ?? []) console.error(`  - ${e.field}: ${e.message}`);
  }
  process.exit(1);
});

import type { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  Loggers,
  ServiceBroker,
  type BrokerOptions,
  type CallingOptions,
  type Middleware,
  type ServiceSchema,
} from 'moleculer';
import { consoleLogger, createBrokerOptions } from '../moleculer.config';
import { ConfigError, loadConfig, type Config, type ServiceName } from '../libs/config';
import { ServiceDatabase } from '../libs/mongo';
import { toServiceSchema, type ActingOperator } from '../libs/service';
import { recordedEnvironmentOf } from '../services/account/store';
import { serviceDefinition } from '../services/catalog';

/**
 * The CLI's short-lived broker and the services a command needs in it (decision 137), not
 * started. Joined to the platform's NATS when NATS_URL is set (so that its broadcasts, a
 * revocation, reach running gateways), its node is seen by every other, so its services serve
 * the command alone: no background work (`config.background`), and `forTheCommandOnly`.
 */
export function commandBroker(
  names: Exclude<ServiceName, 'gateway'>[],
  env: NodeJS.ProcessEnv = process.env,
): { broker: ServiceBroker; config: Config } {
  const config = {
    // Ports of their own: a command run in a service's container finds its ports taken.
    ...loadConfig({ ...env, OPS_PORT: '0', FILE_TRANSFER_PORT: '0', SERVICES: names.join(',') }),
    background: false,
  };
  const broker = new ServiceBroker(cliBrokerOptions(config, env));
  for (const name of names) {
    broker.createService(forTheCommandOnly(toServiceSchema(serviceDefinition(name, config))));
  }
  return { broker, config };
}

/**
 * A command's broker: its calls made as the operator running it, its node named apart from
 * every other on NATS (two commands of the same pid in two containers would otherwise be one
 * node twice, which moleculer ends as fatal), and its log on stderr, its own output being
 * stdout.
 */
export function cliBrokerOptions(
  config: Config,
  env: NodeJS.ProcessEnv = process.env,
): BrokerOptions {
  // Named before the options are made: the circuit breaker tells its own node's failures by it.
  const nodeId = `cli-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const options = createBrokerOptions({ ...config, nodeId });
  return {
    ...options,
    middlewares: [...(options.middlewares ?? []), actingAs(cliOperator(env))],
    // Warnings and errors, and what was done in the operator's name (a line naming them: a
    // file deleted, a wallet credited), unless LOG_LEVEL asks for less; not the broker's and
    // the services' own lines (connecting, started, stopped), which would bury them.
    logger: consoleLogger(config, {
      level: isAtLeast(config.logLevel, 'warn') ? 'warn' : config.logLevel,
      keepBelowLevel: (type, args) =>
        type === 'info' && isAtLeast(config.logLevel, 'info') && namesOperator(args[1]),
      everyLineTo: 'stderr',
    }),
  };
}

/** Whether `level` shows the lines of `wanted` (`info` shows `warn`'s). */
const isAtLeast = (level: string, wanted: string) =>
  Loggers.Base.LEVELS.indexOf(level) >= Loggers.Base.LEVELS.indexOf(wanted);

/** A log line's fields name the operator who acted (`operatorOf`). */
const namesOperator = (fields: unknown) =>
  typeof fields === 'object' && fields !== null && 'operator' in fields;

/** Variables the CLI alone reads, apart from the services' configuration (`waybill config`). */
export const CLI_VARIABLES = {
  operator: 'WAYBILL_OPERATOR',
  webhookSecret: 'WAYBILL_WEBHOOK_SECRET',
} as const;

/** What each of `CLI_VARIABLES` means: `waybill config` prints it, as README's table does. */
export const CLI_VARIABLE_MEANINGS: Record<
  (typeof CLI_VARIABLES)[keyof typeof CLI_VARIABLES],
  string
> = {
  WAYBILL_OPERATOR:
    'Who runs a CLI command: its logs and the records it makes name cli:<WAYBILL_OPERATOR> (cli when unset)',
  WAYBILL_WEBHOOK_SECRET:
    'The signing secret (whsec_...) `webhooks verify` checks with when --secret is not given: kept out of the shell history and the process list',
};

/**
 * Who a command acts as (decision 157): the holder of the platform's own credentials (the CLI
 * reads the whole Secret), named `cli`, or `cli:<WAYBILL_OPERATOR>` when the operator running it
 * says who they are. The logs and records of what it does name them so.
 */
function cliOperator(env: NodeJS.ProcessEnv): ActingOperator {
  const who = (env[CLI_VARIABLES.operator] ?? '')
    .replace(/\p{Cc}/gu, '')
    .trim()
    .slice(0, 100);
  return { name: who ? `cli:${who}` : 'cli', tokenId: null };
}

/** Every call the command makes runs as `operator`, as the gateway's `/admin` calls do. */
function actingAs(operator: ActingOperator): Middleware {
  const call =
    (next: ServiceBroker['call']) =>
    (actionName: string, params?: unknown, opts: CallingOptions = {}) =>
      next(actionName, params, { ...opts, meta: { operator, ...opts.meta } });
  // moleculer's types have a `call` hook return the call's promise; it returns the wrapped
  // call, as its middleware handler (src/middleware.js) uses it.
  return { name: 'ActingOperator', call: call as unknown as Middleware['call'] };
}

/**
 * A service that answers only calls from its own process: its actions are `protected`, which
 * other nodes do not register, so none of the platform's calls is balanced to a command; and it
 * handles no events, so none of the platform's balanced events goes to one.
 */
export function forTheCommandOnly(schema: ServiceSchema): ServiceSchema {
  const actions = Object.fromEntries(
    Object.entries(schema.actions ?? {}).map(([name, action]) => {
      if (typeof action === 'boolean') return [name, action];
      const definition = typeof action === 'function' ? { handler: action } : action;
      return [name, { ...definition, visibility: 'protected' as const }];
    }),
  );
  return { ...schema, actions, events: {} };
}

/**
 * Refuses a database whose platform runs as another environment than the command (decision
 * 138): read before the command's services start, so nothing is written to it. A database no
 * platform has started on yet records nothing, and passes.
 */
export async function refuseOtherEnvironment(config: Config): Promise<void> {
  const db = new ServiceDatabase(config, 'account', (connection) => ({ connection }));
  try {
    const recorded = await recordedEnvironmentOf((await db.connect()).connection);
    if (recorded && recorded !== config.appEnv) {
      throw new ConfigError(
        `APP_ENV: this database is a ${recorded} platform's (recorded when it first started), and this command runs as ${config.appEnv}; run it with APP_ENV=${recorded}`,
      );
    }
  } finally {
    await db.close();
  }
}

/** The exit code of a process ended by `signal`, as a shell reports it (128 + its number). */
const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

/** How long an interrupted command's broker may take to stop before the command exits anyway. */
export const INTERRUPTED_STOP_MS = 5_000;

/**
 * While a command runs, Ctrl-C or SIGTERM stops its broker (calls in flight answered, its node
 * gone from NATS), bounded by INTERRUPTED_STOP_MS, then exits 130 or 143: never 0, so a
 * script sees an interrupted `ledger verify` as unfinished. One stop, whatever comes after the
 * first signal. Answers the function that removes the handlers once the command is over, and
 * answers the stop under way if a signal came (the command then waits for it, not stopping
 * the broker a second time beside it).
 */
export function stopOnSignal(
  broker: Pick<ServiceBroker, 'stop'>,
  exit: (code: number) => void = (code) => process.exit(code),
  signals: Pick<EventEmitter, 'on' | 'off'> = process,
): () => Promise<void> | undefined {
  let stopping: Promise<void> | undefined;
  const listening = (Object.keys(SIGNAL_EXIT) as (keyof typeof SIGNAL_EXIT)[]).map((signal) => {
    const handler = () => {
      stopListening();
      process.stderr.write(`waybill: ${signal} received; stopping\n`);
      const code = SIGNAL_EXIT[signal];
      const overdue = setTimeout(() => exit(code), INTERRUPTED_STOP_MS);
      stopping = broker
        .stop()
        .catch(() => undefined)
        .then(() => {
          clearTimeout(overdue);
          exit(code);
        });
    };
    signals.on(signal, handler);
    return [signal, handler] as const;
  });
  const stopListening = () => {
    for (const [signal, handler] of listening) signals.off(signal, handler);
  };
  return () => {
    stopListening();
    return stopping;
  };
}

import Redis from 'ioredis';
import { DEFAULT_REDIS_COMMAND_TIMEOUT_MS } from './config';

export interface RedisOptions {
  /**
   * Commands issued in one turn of the event loop go out in one write (ioredis
   * auto-pipelining), each still run on its own and answered on its own: for a client that
   * sends a command per HTTP request, where a write per command is most of its cost.
   */
  batchPerTick?: boolean;
  /**
   * How long a command may wait for its answer before it fails (then `orUnavailable` makes it
   * a 503): REDIS_COMMAND_TIMEOUT_MS. A Redis that stalls without closing the connection
   * (frozen, a blackholed network, a long script) would otherwise hold every caller forever.
   * Blocking commands (BLPOP, XREAD BLOCK), which wait on purpose, do not fit such a client; no
   * client of ours sends them.
   */
  commandTimeoutMs?: number;
}

/**
 * A connection with commands waiting that has answered nothing for this many command
 * timeouts is dropped and opened again: commands that timed out stay queued on their
 * connection until it answers or closes, so a silent connection kept open would pile up every
 * request's command for as long as the stall lasts.
 */
export const SILENT_CONNECTION_TIMEOUTS = 3;

/**
 * A Redis client that fails fast: commands error at once while disconnected instead of
 * queueing, and after `commandTimeoutMs` while connected to a Redis that does not answer, so
 * callers answer 503 rather than hang.
 */
export function createRedis(
  url: string,
  connectionName: string,
  onError: (err: Error) => void,
  options: RedisOptions = {},
): Redis {
  const commandTimeoutMs = options.commandTimeoutMs ?? DEFAULT_REDIS_COMMAND_TIMEOUT_MS;
  const client = new Redis(url, {
    connectionName,
    commandTimeout: commandTimeoutMs,
    socketTimeout: commandTimeoutMs * SILENT_CONNECTION_TIMEOUTS,
    enableAutoPipelining: options.batchPerTick ?? false,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A command sent but unanswered when its connection closed fails to its caller (a 503, at
    // once or at its `commandTimeout`): sent again on the next connection, it would count a
    // request refused, or claim a key nobody holds, behind the caller's back.
    autoResendUnfulfilledCommands: false,
    // A primary demoted by a failover (it answers READONLY) keeps its clients' connections
    // open: a new connection reaches the new primary (through the same name or Sentinel).
    // The failed command is not sent again (1), for the reason above.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 1 : false),
    connectTimeout: 5_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  // Without a listener ioredis prints every failed reconnect; report each outage once.
  let reported = false;
  client.on('error', (err: Error) => {
    if (!reported) onError(err);
    reported = true;
  });
  client.on('ready', () => {
    reported = false;
  });
  return client;
}

export async function connectRedis(client: Redis): Promise<void> {
  if (client.status === 'wait') await client.connect();
}

/**
 * How long a starting process waits for Redis before it is ready without it: a Redis that is
 * up answers in milliseconds, one that is down refuses at once.
 */
export const REDIS_START_WAIT_MS = 3_000;

/**
 * Opens the connection and waits for it at most `waitMs`, never failing: a process that
 * answers without Redis (the gateway's 503s) then answers its first requests with Redis, not
 * with a 503 of a connection still being opened, yet starts all the same when Redis refuses
 * (at once) or stays silent (until the bound). The client keeps reconnecting after either.
 */
export async function connectRedisWithin(client: Redis, waitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
    timer.unref();
  });
  try {
    await Promise.race([connectRedis(client).catch(() => undefined), bound]);
  } finally {
    clearTimeout(timer);
  }
}

export function redisReady(client: Redis): boolean {
  return client.status === 'ready';
}

/**
 * A Lua script run on one key (`KEYS[1]`), or `{lua, keys: 'variable'}`: one whose caller
 * passes the number of keys as the command's first argument, then the keys.
 */
export type ScriptDefinition = string | { lua: string; keys: 'variable' };

/**
 * `scripts` as commands of the client, each run atomically by Redis. ioredis sends a script's
 * text once per connection and its SHA after, and sends the text again when Redis answers
 * NOSCRIPT (after a restart). Several users may share one client, so a command already
 * defined is left as it is.
 */
export function defineScripts<Commands extends object>(
  redis: Redis,
  scripts: Record<keyof Commands & string, ScriptDefinition>,
): Redis & Commands {
  for (const [name, script] of Object.entries<ScriptDefinition>(scripts)) {
    if (name in redis) continue;
    if (typeof script === 'string') redis.defineCommand(name, { numberOfKeys: 1, lua: script });
    else redis.defineCommand(name, { lua: script.lua });
  }
  return redis as Redis & Commands;
}

/**
 * Runs a write whose failure its caller answers 503, undoing it should it land all the same:
 * a write whose answer was only late (its `commandTimeout`) still lands, and `undo`, sent after
 * it on the same connection, takes it back, so that it holds nothing for a request that never
 * ran. One lost with its connection is never sent again (`createRedis`). The undo's own failure
 * is the write's: left to expire.
 */
export async function undoneIfFailed<T>(
  write: () => Promise<T>,
  undo: () => Promise<unknown>,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    undo().catch(() => undefined);
    throw err;
  }
}

/** Runs `command`; any failure to reach Redis becomes `unavailable()` (a 503 the caller chose). */
export async function orUnavailable<T>(
  command: () => Promise<T>,
  unavailable: () => Error,
): Promise<T> {
  try {
    return await command();
  } catch {
    throw unavailable();
  }
}

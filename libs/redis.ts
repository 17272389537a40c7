import Redis from 'ioredis';

/**
 * A Redis client that fails fast: commands error at once while disconnected instead of
 * queueing, so callers answer 503 rather than hang.
 */
export function createRedis(
  url: string,
  connectionName: string,
  onError: (err: Error) => void,
): Redis {
  const client = new Redis(url, {
    connectionName,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
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

export function redisReady(client: Redis): boolean {
  return client.status === 'ready';
}

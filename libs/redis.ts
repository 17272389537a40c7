import Redis from 'ioredis';

/**
 * A Redis client that fails fast: commands error at once while disconnected instead of
 * queueing, so callers answer 503 rather than hang.
 */
export function createRedis(url: string, connectionName: string): Redis {
  return new Redis(url, {
    connectionName,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}

export async function connectRedis(client: Redis): Promise<void> {
  if (client.status === 'wait') await client.connect();
}

export function redisReady(client: Redis): boolean {
  return client.status === 'ready';
}

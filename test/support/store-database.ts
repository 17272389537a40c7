import mongoose from 'mongoose';
import { isolation } from './stack';

/** A package as a store inserts it (`PackageStore.insert` adds the user). */
export const STORED_PACKAGE = {
  packageType: 'Parcel',
  name: 'Box',
  quantity: 1,
  size: 'SMALL' as const,
  valueKobo: 500,
};

export interface StoreDatabase<M> {
  models: M;
  /** What `work` answers, and how many finds it sent to `collection`. */
  countFinds<T>(collection: string, work: () => Promise<T>): Promise<{ result: T; finds: number }>;
  /** The `_id`s of the documents `work` sent to `collection` in inserts (taken or not). */
  idsInserted(collection: string, work: () => Promise<unknown>): Promise<string[]>;
}

/**
 * A service's models on a database of their own on the real server, for a test that drives a
 * store directly: opened with their indexes before the file's tests, dropped after them.
 * `onCommand` sees every command the driver sends.
 */
export function useStoreDatabase<M extends Record<string, { createIndexes(): Promise<unknown> }>>(
  service: string,
  define: (connection: mongoose.Connection) => M,
  onCommand?: (event: mongoose.mongo.CommandStartedEvent) => void,
): StoreDatabase<M> {
  const iso = isolation();
  const finds = new Map<string, number>();
  /** The ids sent to each collection an `idsInserted` is watching. */
  const watched = new Map<string, string[]>();
  const opened = {
    async countFinds<T>(collection: string, work: () => Promise<T>) {
      const before = finds.get(collection) ?? 0;
      const result = await work();
      return { result, finds: (finds.get(collection) ?? 0) - before };
    },
    async idsInserted(collection: string, work: () => Promise<unknown>) {
      const ids: string[] = [];
      watched.set(collection, ids);
      try {
        await work();
        return ids;
      } finally {
        watched.delete(collection);
      }
    },
  } as StoreDatabase<M> & { connection?: mongoose.Connection };
  beforeAll(async () => {
    const connection = await mongoose
      .createConnection(process.env.MONGO_URL as string, {
        dbName: `${iso.dbPrefix}${service}`,
        monitorCommands: true,
      })
      .asPromise();
    opened.connection = connection;
    connection.getClient().on('commandStarted', (event) => {
      if (event.commandName === 'find') {
        const collection = String(event.command.find);
        finds.set(collection, (finds.get(collection) ?? 0) + 1);
      }
      const ids = event.commandName === 'insert' && watched.get(String(event.command.insert));
      if (ids) {
        for (const d of event.command.documents as { _id: unknown }[]) ids.push(String(d._id));
      }
      onCommand?.(event);
    });
    opened.models = define(connection);
    await Promise.all(Object.values(opened.models).map((m) => m.createIndexes()));
  });
  afterAll(async () => {
    await opened.connection?.dropDatabase();
    await opened.connection?.close();
  });
  return opened;
}

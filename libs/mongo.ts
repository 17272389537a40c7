import mongoose, { type Connection } from 'mongoose';
import type { ServiceSchema } from 'moleculer';
import type { Config } from './config';
import { serviceUnavailable } from './errors';
import { registerHealthCheck, unregisterHealthCheck } from './health';

const DUPLICATE_KEY = 11000;

/** A unique index refused the write: the caller lost a race or repeated itself. */
export const isDuplicateKey = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === DUPLICATE_KEY;

/** The server cannot be reached (down, restarting, cut off), as opposed to refusing the work. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const { mongo } = mongoose;
  return (
    err instanceof mongo.MongoServerSelectionError ||
    err instanceof mongo.MongoNetworkError ||
    err instanceof mongo.MongoNotConnectedError ||
    err instanceof mongo.MongoTopologyClosedError
  );
}

/**
 * One service's own database: its own mongoose connection (never the global one), opened
 * when the service starts and closed when it stops.
 */
export class ServiceDatabase<Models> {
  private connection: Connection | undefined;
  private built: Models | undefined;
  readonly name: string;

  constructor(
    private readonly config: Pick<Config, 'mongoUrl' | 'mongoDbPrefix' | 'mongoTimeoutMs'>,
    service: string,
    private readonly defineModels: (connection: Connection) => Models,
  ) {
    this.name = `${config.mongoDbPrefix}${service}`;
  }

  get models(): Models {
    if (!this.built) throw new Error(`database ${this.name} is not connected`);
    return this.built;
  }

  get connected(): boolean {
    return this.connection?.readyState === mongoose.ConnectionStates.connected;
  }

  async connect(): Promise<Models> {
    if (this.built) return this.built;
    const connection = mongoose.createConnection(this.config.mongoUrl, {
      dbName: this.name,
      // While the server is away, each operation waits this long for it, then fails (503).
      serverSelectionTimeoutMS: this.config.mongoTimeoutMs,
      autoIndex: false,
    });
    await connection.asPromise();
    this.connection = connection;
    const models = this.defineModels(connection);
    // Indexes are part of correctness here (unique keys back idempotency), so build them now.
    await Promise.all(Object.values(connection.models).map((m) => m.createIndexes()));
    this.built = models;
    return models;
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.built = undefined;
    await connection?.close();
  }

  /** Drops the whole database; for tests only. */
  async dropDatabase(): Promise<void> {
    await this.connection?.dropDatabase();
  }

  /**
   * Mixin that ties the connection to the service lifecycle and to readiness, and answers
   * 503 for any action that fails because the server cannot be reached.
   */
  mixin(): Partial<ServiceSchema> {
    const db = this as ServiceDatabase<unknown>;
    const checkName = `mongo:${db.name}`;
    return {
      hooks: {
        error: {
          '*'(_ctx: unknown, err: unknown) {
            if (!isDatabaseUnavailable(err)) throw err;
            throw serviceUnavailable('The database is unavailable; retry in a few seconds');
          },
        },
      },
      async started() {
        await db.connect();
        registerHealthCheck(this.broker, checkName, () => db.connected);
      },
      async stopped() {
        unregisterHealthCheck(this.broker, checkName);
        await db.close();
      },
    };
  }
}

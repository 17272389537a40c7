import mongoose, { type Connection } from 'mongoose';
import type { ServiceSchema } from 'moleculer';
import type { Config } from './config';
import { registerHealthCheck, unregisterHealthCheck } from './health';

const DUPLICATE_KEY = 11000;

/** A unique index refused the write: the caller lost a race or repeated itself. */
export const isDuplicateKey = (err: unknown): boolean =>
  (err as { code?: unknown } | null)?.code === DUPLICATE_KEY;

/**
 * One service's own database: its own mongoose connection (never the global one), opened
 * when the service starts and closed when it stops.
 */
export class ServiceDatabase<Models> {
  private connection: Connection | undefined;
  private built: Models | undefined;
  readonly name: string;

  constructor(
    private readonly config: Pick<Config, 'mongoUrl' | 'mongoDbPrefix'>,
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
      serverSelectionTimeoutMS: 10_000,
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

  /** Mixin that ties the connection to the service lifecycle and to readiness. */
  mixin(): Partial<ServiceSchema> {
    const db = this as ServiceDatabase<unknown>;
    const checkName = `mongo:${db.name}`;
    return {
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

import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';
import { CachedValue } from '../../libs/cache';
import { insertOnce } from '../../libs/mongo';
import { defineWriterLockModels, WriterLocks } from '../../libs/writer-locks';
import { DEFAULT_FLEET_TYPES, byCapacity } from './fleet-types';

const fleetTypeSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    code: { type: String, required: true, unique: true },
    name: { type: String, required: true },
    icon: { type: String, default: null },
    description: { type: String, default: null },
    maxWeightGrams: { type: Number, required: true },
    averageSpeedKmh: { type: Number, required: true },
    active: { type: Boolean, required: true, default: true },
  },
  { timestamps: true, versionKey: false },
);

export type FleetTypeRecord = InferSchemaType<typeof fleetTypeSchema> & {
  createdAt: Date;
  updatedAt: Date;
};

export function defineGeoModels(connection: Connection) {
  return {
    FleetType: connection.model('FleetType', fleetTypeSchema, 'fleet_types'),
    // An operator's change of a fleet type under way, `_id` the type (libs/writer-locks).
    ...defineWriterLockModels(connection, 'fleet_type_edit', 'FleetTypeEdit'),
  };
}

export type GeoModels = ReturnType<typeof defineGeoModels>;

type FleetTypeFields = Omit<FleetTypeRecord, '_id' | 'createdAt' | 'updatedAt'>;

/**
 * Fleet types: read on every route and quote, changed a few times a year, so they are kept
 * in memory, dropped when any replica announces a change, and reread at the latest after
 * `cacheMs` in case an announcement was lost (decision 31).
 */
export class FleetTypeStore {
  private readonly cache: CachedValue<FleetTypeRecord[]>;

  /**
   * Operators' changes of a fleet type, one at a time (decision 132): FerretDB writes a change
   * as the whole type it read, so two at once undid each other (a deactivation lost).
   */
  readonly edits: WriterLocks;

  constructor(
    private readonly models: () => GeoModels,
    cacheMs: number,
    /** Told when the database could not be read and the last fleet types answered instead. */
    onStale?: (err: unknown) => void,
  ) {
    this.edits = WriterLocks.named(models, 'FleetTypeEdit', 'Fleet type');
    this.cache = new CachedValue(
      async () => (await this.models().FleetType.find({}).lean()).sort(byCapacity),
      cacheMs,
      onStale,
    );
  }

  /**
   * Smallest first; with `activeOnly`, the inactive ones left out. `stored`: read from the
   * database (and kept), not from memory, which may predate a change another replica made and
   * has not announced here yet.
   */
  async list(
    activeOnly: boolean,
    read: 'cached' | 'stored' = 'cached',
  ): Promise<FleetTypeRecord[]> {
    const records = await (read === 'stored' ? this.cache.fresh() : this.cache.get());
    return activeOnly ? records.filter((r) => r.active) : records;
  }

  /**
   * A fleet type as stored, when memory may predate another replica's change of it; memory is
   * read again at its next use if it did. Null when there is none, or the database is away.
   */
  async storedFleetType(fleetTypeId: string): Promise<FleetTypeRecord | null> {
    const stored = await this.models()
      .FleetType.findById(fleetTypeId)
      .lean()
      .catch(() => null);
    const remembered = (await this.cache.get()).find((r) => r._id === fleetTypeId);
    if (stored && remembered?.active !== stored.active) this.cache.invalidate();
    return stored;
  }

  /** A fleet type, active or not; null when there is none. */
  async find(fleetTypeId: string): Promise<FleetTypeRecord | null> {
    const cached = (await this.cache.get()).find((r) => r._id === fleetTypeId);
    return cached ?? (await this.models().FleetType.findById(fleetTypeId).lean());
  }

  /** Throws a duplicate-key error when the code is taken. */
  async create(fields: FleetTypeFields): Promise<FleetTypeRecord> {
    const record = await this.models().FleetType.create(fields);
    this.cache.invalidate();
    return record.toObject();
  }

  async update(
    fleetTypeId: string,
    changes: Partial<FleetTypeFields>,
  ): Promise<FleetTypeRecord | null> {
    const record = await this.models()
      .FleetType.findOneAndUpdate({ _id: fleetTypeId }, { $set: changes }, { new: true })
      .lean();
    this.cache.invalidate();
    return record;
  }

  /** Another replica changed them. */
  forget(): void {
    this.cache.invalidate();
  }

  /**
   * Inserts the default fleet types that are missing, at every start; never writes an existing
   * one. An upsert by code did: FerretDB wrote each back whole with its new `updatedAt`, and an
   * operator's change made meanwhile (a type deactivated) was undone.
   */
  async ensureDefaults(): Promise<void> {
    const { FleetType } = this.models();
    const stored = new Set((await FleetType.find({}, { code: 1 }).lean()).map((t) => t.code));
    for (const seed of DEFAULT_FLEET_TYPES.filter((s) => !stored.has(s.code))) {
      // Another replica may insert it at the same moment: its code is unique.
      await insertOnce(() => FleetType.create({ ...seed, icon: null, active: true }));
    }
  }
}

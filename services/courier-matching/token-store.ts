import { Schema, type Connection } from 'mongoose';

/**
 * A courier token, `_id` the SHA-256 (hex) of the token: the gateway's lookup, on every cache
 * miss, is an `_id` equality, the one filter FerretDB answers from an index (decision 42).
 * `tokenId` is the public handle (UUID) operators list and revoke by.
 */
const courierTokenSchema = new Schema(
  {
    _id: { type: String, required: true },
    tokenId: { type: String, required: true, unique: true },
    courierId: { type: String, required: true },
    lastUsedAt: { type: Date, default: null },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
courierTokenSchema.index({ courierId: 1, createdAt: -1 });

export interface CourierTokenRecord {
  /** SHA-256 of the token. */
  _id: string;
  tokenId: string;
  courierId: string;
  lastUsedAt: Date | null;
  createdAt: Date;
}

export function defineTokenModel(connection: Connection) {
  return connection.model('CourierToken', courierTokenSchema, 'courier_tokens');
}

type TokenModel = ReturnType<typeof defineTokenModel>;

/** Courier tokens' persistence: every query the token actions make. */
export class CourierTokenStore {
  constructor(private readonly model: () => TokenModel) {}

  async create(fields: { hash: string; tokenId: string; courierId: string }) {
    const { hash, ...rest } = fields;
    const record = await this.model().create({ _id: hash, ...rest });
    return record.toObject() as CourierTokenRecord;
  }

  findByHash(hash: string): Promise<CourierTokenRecord | null> {
    return this.model().findById(hash).lean<CourierTokenRecord>();
  }

  /** Revocations only, rare: FerretDB scans for a filter other than `_id`. */
  findByTokenId(tokenId: string): Promise<CourierTokenRecord | null> {
    return this.model().findOne({ tokenId }).lean<CourierTokenRecord>();
  }

  /** A courier's tokens, newest first. */
  listFor(courierId: string, limit: number): Promise<CourierTokenRecord[]> {
    return this.model()
      .find({ courierId })
      .sort({ createdAt: -1, _id: -1 })
      .limit(limit)
      .lean<CourierTokenRecord[]>();
  }

  /** The hashes of a courier's tokens (a retirement: gateways drop them from their caches). */
  async hashesOf(courierId: string): Promise<string[]> {
    const tokens = await this.model().find({ courierId }, { _id: 1 }).lean<{ _id: string }[]>();
    return tokens.map((t) => t._id);
  }

  countFor(courierId: string): Promise<number> {
    return this.model().countDocuments({ courierId });
  }

  /** False when the token was gone already. */
  async remove(hash: string): Promise<boolean> {
    const { deletedCount } = await this.model().deleteOne({ _id: hash });
    return deletedCount > 0;
  }

  async touch(hash: string, at: Date): Promise<void> {
    await this.model().updateOne({ _id: hash }, { $set: { lastUsedAt: at } });
  }
}

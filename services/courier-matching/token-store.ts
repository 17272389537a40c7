import { Schema, type Connection } from 'mongoose';
import { definePlaceModel, StoredPlaces, type PlaceModel } from '../../libs/places';

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
    place: { type: Number },
    createdBy: { type: String },
    createdByTokenId: { type: String },
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
  /** Which of its courier's places it holds (libs/places); none if created before places. */
  place?: number;
  /** The operator who made it (decision 157's name); none if made before it was recorded. */
  createdBy?: string;
  /** The operator token it was made with; none for the platform's own credentials. */
  createdByTokenId?: string;
}

export function defineTokenModels(connection: Connection) {
  return {
    CourierToken: connection.model('CourierToken', courierTokenSchema, 'courier_tokens'),
    /** `_id` = `<courierId>:<k>`: the token (by `tokenId`) that holds the k-th place. */
    CourierTokenPlace: definePlaceModel(connection, 'CourierTokenPlace', 'courier_token_places'),
  };
}

type TokenModel = ReturnType<typeof defineTokenModels>['CourierToken'];

/** Courier tokens' persistence: every query the token actions make. */
export class CourierTokenStore {
  /** Each courier's token places: COURIER_TOKENS_MAX held exactly. */
  readonly places: StoredPlaces;

  constructor(
    private readonly model: () => TokenModel,
    placeModel: () => PlaceModel,
  ) {
    this.places = new StoredPlaces(placeModel, async (tokenId) => {
      const token = await this.findByTokenId(tokenId);
      // A revoked token is removed: its place reads as never stored (free after a while).
      return token && { gone: false, place: token.place };
    });
  }

  async create(
    fields: Pick<CourierTokenRecord, 'tokenId' | 'courierId' | 'createdBy' | 'createdByTokenId'> & {
      hash: string;
      place: number;
    },
  ) {
    const { hash, ...rest } = fields;
    const record = await this.model().create({ _id: hash, ...rest });
    return record.toObject() as CourierTokenRecord;
  }

  findByHash(hash: string): Promise<CourierTokenRecord | null> {
    return this.model().findById(hash).lean<CourierTokenRecord>();
  }

  /**
   * Revocations and places left behind only, rare: FerretDB scans for a filter other than `_id`.
   */
  findByTokenId(tokenId: string): Promise<CourierTokenRecord | null> {
    return this.model().findOne({ tokenId }).lean<CourierTokenRecord>();
  }

  /**
   * A courier's tokens, newest first: every one, so that none that works is hidden from the
   * operators (they are COURIER_TOKENS_MAX at most, and those created before places).
   */
  listFor(courierId: string): Promise<CourierTokenRecord[]> {
    return this.model()
      .find({ courierId })
      .sort({ createdAt: -1, _id: -1 })
      .lean<CourierTokenRecord[]>();
  }

  /** The hashes of a courier's tokens (a retirement: gateways drop them from their caches). */
  async hashesOf(courierId: string): Promise<string[]> {
    const tokens = await this.model().find({ courierId }, { _id: 1 }).lean<{ _id: string }[]>();
    return tokens.map((t) => t._id);
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

import { Schema, type Connection } from 'mongoose';
import { insertOnce } from '../../libs/mongo';
import { definePlaceModel, StoredPlaces } from '../../libs/places';

/**
 * An operator token, `_id` the SHA-256 (hex) of the token: the gateway's lookup, on every cache
 * miss, is an `_id` equality, the one filter FerretDB answers from an index (decision 42).
 * `tokenId` is the public handle operators list and revoke by, and the logs name.
 */
const operatorTokenSchema = new Schema(
  {
    _id: { type: String, required: true },
    tokenId: { type: String, required: true, unique: true },
    name: { type: String, required: true },
    createdBy: { type: String, required: true },
    expiresAt: { type: Date, default: null },
    lastUsedAt: { type: Date, default: null },
    place: { type: Number },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
operatorTokenSchema.index({ createdAt: -1 });

/**
 * A token's revocation, `_id` the token's id, apart from the token: FerretDB writes a document
 * whole from the copy an update read (decision 16), so a use noted on the token while it was
 * revoked could write it back unrevoked (as API keys' uses, decision 99). Inserted once: the
 * first revocation, and who made it, stand.
 */
const revocationSchema = new Schema(
  {
    _id: { type: String, required: true },
    at: { type: Date, required: true },
    by: { type: String, required: true },
  },
  { versionKey: false },
);

export interface OperatorTokenRecord {
  /** SHA-256 of the token. */
  _id: string;
  tokenId: string;
  name: string;
  createdBy: string;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  createdAt: Date;
  place?: number;
}

export interface OperatorTokenRevocation {
  _id: string;
  at: Date;
  by: string;
}

export function defineOperatorModels(connection: Connection) {
  return {
    OperatorToken: connection.model('OperatorToken', operatorTokenSchema, 'operator_tokens'),
    OperatorTokenRevocation: connection.model(
      'OperatorTokenRevocation',
      revocationSchema,
      'operator_token_revocations',
    ),
    /** `_id` = `operators:<k>`: the live token (by `tokenId`) that holds the k-th place. */
    OperatorTokenPlace: definePlaceModel(connection, 'OperatorTokenPlace', 'operator_token_places'),
  };
}

type OperatorModels = ReturnType<typeof defineOperatorModels>;

/** Who the operator tokens' places belong to: one cap for the whole platform. */
export const OPERATOR_PLACES_OWNER = 'operators';

/** Whether a token still works at `now`: neither revoked nor past its expiry. */
export const isLive = (
  token: Pick<OperatorTokenRecord, 'expiresAt'>,
  revocation: OperatorTokenRevocation | null,
  now: Date,
) => !revocation && (!token.expiresAt || token.expiresAt.getTime() > now.getTime());

/** Operator tokens' persistence: every query the operator token actions make. */
export class OperatorTokenStore {
  /** The platform's operator token places: OPERATOR_TOKENS_MAX live at once, held exactly. */
  readonly places: StoredPlaces;

  constructor(
    private readonly models: () => OperatorModels,
    now: () => Date = () => new Date(),
  ) {
    this.places = new StoredPlaces(
      () => models().OperatorTokenPlace,
      async (tokenId) => {
        const token = await this.findByTokenId(tokenId);
        if (!token) return null;
        return {
          gone: !isLive(token, await this.revocationOf(tokenId), now()),
          place: token.place,
        };
      },
    );
  }

  async create(
    fields: Omit<OperatorTokenRecord, '_id' | 'lastUsedAt'> & { hash: string },
  ): Promise<OperatorTokenRecord> {
    const { hash, ...rest } = fields;
    const record = await this.models().OperatorToken.create({ _id: hash, ...rest });
    return record.toObject() as OperatorTokenRecord;
  }

  findByHash(hash: string): Promise<OperatorTokenRecord | null> {
    return this.models().OperatorToken.findById(hash).lean<OperatorTokenRecord>();
  }

  /** Revocations, lists and places left behind only: FerretDB scans for a filter but `_id`. */
  findByTokenId(tokenId: string): Promise<OperatorTokenRecord | null> {
    return this.models().OperatorToken.findOne({ tokenId }).lean<OperatorTokenRecord>();
  }

  revocationOf(tokenId: string): Promise<OperatorTokenRevocation | null> {
    return this.models().OperatorTokenRevocation.findById(tokenId).lean<OperatorTokenRevocation>();
  }

  /** Records the revocation unless one is; answers the one that stands. */
  async revoke(tokenId: string, by: string, at: Date): Promise<OperatorTokenRevocation> {
    await insertOnce(() => this.models().OperatorTokenRevocation.create({ _id: tokenId, at, by }));
    const revocation = await this.revocationOf(tokenId);
    if (!revocation) throw new Error(`the revocation of operator token ${tokenId} was not stored`);
    return revocation;
  }

  /** A page of tokens, newest first, revoked and expired ones too: they name past acts. */
  page({ limit, offset }: { limit: number; offset: number }): Promise<OperatorTokenRecord[]> {
    return this.models()
      .OperatorToken.find({})
      .sort({ createdAt: -1, _id: -1 })
      .skip(offset)
      .limit(limit)
      .lean<OperatorTokenRecord[]>();
  }

  /** The revocations of these tokens, by token id. */
  async revocationsOf(tokenIds: string[]): Promise<Map<string, OperatorTokenRevocation>> {
    const found = await this.models()
      .OperatorTokenRevocation.find({ _id: { $in: tokenIds } })
      .lean<OperatorTokenRevocation[]>();
    return new Map(found.map((r) => [r._id, r]));
  }

  /** The tokens that still work at `now`, for the cap: the places they hold. */
  async livePlaces(now: Date): Promise<{ place?: number }[]> {
    const tokens = await this.models()
      .OperatorToken.find({ $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] })
      .lean<OperatorTokenRecord[]>();
    const revoked = await this.revocationsOf(tokens.map((t) => t.tokenId));
    return tokens.filter((t) => !revoked.has(t.tokenId)).map((t) => ({ place: t.place }));
  }

  async touch(hash: string, at: Date): Promise<void> {
    await this.models().OperatorToken.updateOne({ _id: hash }, { $set: { lastUsedAt: at } });
  }
}

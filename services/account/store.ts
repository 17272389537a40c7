import { randomUUID } from 'node:crypto';
import { APP_ENVIRONMENTS, type AppEnvironment } from '../../libs/config';
import { Error as MongooseError, Schema, type Connection, type InferSchemaType } from 'mongoose';
import { insertOnce, isDuplicateKey, raiseById, updateByIdWhere } from '../../libs/mongo';
import { definePlaceModel, StoredPlaces } from '../../libs/places';
import { defineOperatorModels } from './operator-store';
import {
  markedRecorded,
  passRecordsIn,
  runPass,
  storedSince,
  unrecordedSince,
  type BackfillPass,
} from '../../libs/backfills';

const userSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    name: { type: String, required: true },
    email: { type: String, required: true, unique: true },
    phone: { type: String, required: true },
    profileId: { type: String, required: true, default: () => randomUUID() },
  },
  { timestamps: true, versionKey: false },
);

const quotaSchema = new Schema(
  {
    limit: { type: Number, required: true },
    windowSeconds: { type: Number, required: true },
  },
  { _id: false },
);

const apiKeySchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    userId: { type: String, required: true, index: true },
    hash: { type: String, required: true, unique: true },
    environment: { type: String, required: true, enum: APP_ENVIRONMENTS },
    serverOnly: { type: Boolean, required: true },
    quota: { type: quotaSchema, default: null },
    /** Written by keys stored before `api_key_uses` existed only; read with the key's use. */
    lastUsedAt: { type: Date, default: null },
    revokedAt: { type: Date, default: null },
    /** Which of its user's places it holds (libs/places); none if created before places. */
    place: { type: Number },
    /** Set when stored by a writer that entered its hash first: backfill passes skip it (libs/backfills). */
    recordedFirst: Boolean,
    /** Who made it (`makerOf`); absent for a key made before this was recorded. */
    createdBy: { type: String },
    /** The operator token it was made with; absent for the platform's own credentials. */
    createdByTokenId: { type: String },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);

/**
 * A key's hash → its id: the gateway looks a presented key up by its hash on every cache miss,
 * and FerretDB 1.24 on SQLite finds a document by `_id` alone without reading every other.
 */
const keyHashSchema = new Schema(
  {
    _id: { type: String, required: true },
    keyId: { type: String, required: true },
    /** On the entry that marks a backfill's pass (libs/backfills): when the pass began. */
    startedAt: { type: Date },
  },
  { versionKey: false },
);

/**
 * When a key was last used, apart from the key: FerretDB writes a document whole from the copy
 * an update read (decision 16), so a use recorded on the key, racing its revocation, could
 * write the key back unrevoked (decision 99).
 */
const keyUseSchema = new Schema({ _id: String, at: Date }, { versionKey: false });

/**
 * A user's e-mail or phone → the user, found by `_id` alone: a delivery asked to be linked to
 * its recipient's account looks its contact up as it is requested (FerretDB 1.24 on SQLite
 * would read every user for a find by `email`). `_id` is `email:<e-mail>` or `phone:<E.164>`;
 * a phone two users share also has `phone:<E.164>:shared`, and names neither of them.
 */
const userContactSchema = new Schema(
  {
    _id: { type: String, required: true },
    userId: { type: String, required: true },
    /**
     * On a phone claimed ahead of its user (`claimPhoneAhead`): the user's e-mail, so that a
     * repeat of the creation racing it tells itself from another user with the phone.
     */
    email: { type: String },
    /** On the entry that marks a backfill's pass (libs/backfills): when the pass began. */
    startedAt: { type: Date },
  },
  { versionKey: false },
);

/** The contact entry that marks the users stored before `user_contacts` existed as entered. */
const CONTACTS_FILLED = '$filled';

/** The hash entry that marks the keys stored before `api_key_hashes` existed as entered. */
const HASHES_FILLED = '$filled';

export type UserRecord = InferSchemaType<typeof userSchema>;
export type ApiKeyRecord = InferSchemaType<typeof apiKeySchema>;

/**
 * The environment of the platform whose database this is (decision 138): one document,
 * `_id` 'environment', written once by the first account service of the platform to start.
 */
const deploymentSchema = new Schema(
  {
    _id: { type: String, required: true },
    appEnv: { type: String, required: true, enum: APP_ENVIRONMENTS },
    at: { type: Date, required: true },
  },
  { versionKey: false },
);
const ENVIRONMENT = 'environment';
const DEPLOYMENT = 'deployment';

/**
 * The platform's environment as recorded in its account database, read over `connection`
 * without defining a model (which would build indexes): the CLI reads it before its services
 * start. Null before any platform started.
 */
export async function recordedEnvironmentOf(connection: Connection): Promise<string | null> {
  const found = await connection
    .collection<{ _id: string; appEnv: string }>(DEPLOYMENT)
    .findOne({ _id: ENVIRONMENT });
  return found?.appEnv ?? null;
}

export function defineAccountModels(connection: Connection) {
  return {
    User: connection.model('User', userSchema, 'users'),
    ApiKey: connection.model('ApiKey', apiKeySchema, 'api_keys'),
    KeyHash: connection.model('ApiKeyHash', keyHashSchema, 'api_key_hashes'),
    KeyUse: connection.model('ApiKeyUse', keyUseSchema, 'api_key_uses'),
    UserContact: connection.model('UserContact', userContactSchema, 'user_contacts'),
    /** `_id` = `<userId>:<k>`: the active key that holds the user's k-th place. */
    KeyPlace: definePlaceModel(connection, 'ApiKeyPlace', 'api_key_places'),
    Deployment: connection.model('Deployment', deploymentSchema, DEPLOYMENT),
    ...defineOperatorModels(connection),
  };
}

export type AccountModels = ReturnType<typeof defineAccountModels>;

/** A write the database or the schema refused: it was not applied, and will not be. */
const isRefusal = (err: unknown) =>
  isDuplicateKey(err) || err instanceof MongooseError.ValidationError;

/** The account service's persistence: every query its actions make. */
export class AccountStore {
  /** Each user's API key places: MAX_ACTIVE_KEYS_PER_USER held exactly. */
  readonly keyPlaces: StoredPlaces;

  /** Records `appEnv` as the platform's unless one is recorded; answers the one recorded. */
  async recordEnvironment(appEnv: AppEnvironment): Promise<string> {
    const { Deployment } = this.models();
    await insertOnce(() => Deployment.create({ _id: ENVIRONMENT, appEnv, at: new Date() }));
    return (await recordedEnvironmentOf(Deployment.db)) ?? appEnv;
  }

  constructor(private readonly models: () => AccountModels) {
    this.keyPlaces = new StoredPlaces(
      () => this.models().KeyPlace,
      async (keyId) => {
        const key = await this.keyById(keyId);
        return key && { gone: key.revokedAt != null, place: key.place ?? undefined };
      },
    );
  }

  findUser(userId: string) {
    return this.models().User.findById(userId).lean();
  }

  /**
   * Claims the user's phone, then stores the user, then enters their contacts
   * (`enterContacts`). The phone is claimed before the user exists: a user stored whose phone
   * was not entered (the process stopped, the database busy) let the next user of that phone
   * enter it alone, who was then linked to, and shown, the deliveries sent to the first
   * (decision 107). A creation that fails gives its claim back.
   */
  async createUser(fields: { name: string; email: string; phone: string }) {
    const _id = randomUUID();
    const claimed = await this.claimPhoneAhead(fields, _id);
    let user;
    try {
      user = (await this.models().User.create({ _id, ...fields })).toObject();
    } catch (err) {
      // Refused (the e-mail another user's, the document invalid): never stored, its phone
      // must not keep naming it. Not after any other error: a write that errs may still land
      // (a timeout), and that user's phone must stay claimed; a claim left so names a user
      // never stored, whose e-mail's next user takes it over (`enterContacts`). A marker of
      // sharing stays (another creation may have relied on it); it links nobody, the safe way.
      if (claimed && isRefusal(err)) {
        await this.models()
          .UserContact.deleteOne({ _id: `phone:${fields.phone}`, userId: _id })
          .catch(() => undefined);
      }
      throw err;
    }
    await this.enterContacts(user);
    return user;
  }

  /**
   * Enters the phone as the new user's, or marks it shared when another user holds it; true
   * when it now names the new user. Not when the e-mail is entered: the creation is then a
   * repeat (refused), whose user may be the phone's holder, and the phone is entered after
   * the user is stored, if ever. A repeat sent with another user's phone marks that phone
   * shared wrongly: the safe way, as a shared phone links nobody.
   */
  private async claimPhoneAhead(
    { email, phone }: { email: string; phone: string },
    userId: string,
  ): Promise<boolean> {
    const { UserContact } = this.models();
    if (await UserContact.exists({ _id: `email:${email}` })) return false;
    const phoneId = `phone:${phone}`;
    if (await insertOnce(() => UserContact.create({ _id: phoneId, userId, email }))) return true;
    const holder = await UserContact.findById(phoneId).lean();
    if (!holder || holder.userId === userId) return false;
    // Claimed for this e-mail: a repeat of the creation (sent again after an error, or twice
    // at once), which its e-mail's uniqueness refuses; refused, it completes their contacts.
    if (holder.email === email || (await this.findUser(holder.userId))?.email === email) {
      return false;
    }
    await insertOnce(() => UserContact.create({ _id: `${phoneId}:shared`, userId }));
    return false;
  }

  /**
   * Enters the user's e-mail and phone, each once however often: a phone already another
   * user's is marked shared instead. After the user is stored: a creation refused for its
   * e-mail (a repeat) must not mark its phone shared. One that fails between the two is
   * completed by its repeat's 409 (`createUser`), or by the backfill when a replica starts.
   */
  async enterContacts(user: Pick<UserRecord, 'email' | 'phone'> & { _id: string }) {
    const { UserContact } = this.models();
    await insertOnce(() => UserContact.create({ _id: `email:${user.email}`, userId: user._id }));
    const phoneId = `phone:${user.phone}`;
    const entry = { _id: phoneId, userId: user._id, email: user.email };
    // Twice at most: a claim taken over (below) may be taken over at once by another entering
    // of the same user's contacts (a repeat's 409, the backfill), which then holds it.
    for (let round = 0; round < 2; round++) {
      if (await insertOnce(() => UserContact.create(entry))) return;
      const holder = await UserContact.findById(phoneId).lean();
      if (!holder || holder.userId === user._id) return;
      if (holder.email !== user.email) break;
      // Claimed for this e-mail by a creation never stored (the e-mail is one user's, this
      // one's): the phone is this user's.
      await UserContact.deleteOne({ _id: phoneId, userId: holder.userId });
    }
    await insertOnce(() => UserContact.create({ _id: `${phoneId}:shared`, userId: user._id }));
  }

  /**
   * The user whose e-mail is `email`, or else the one user whose phone is `phone`: a phone
   * two users share names neither. By `_id` alone.
   */
  async userByContact(contact: { email?: string; phone?: string }) {
    const { UserContact } = this.models();
    const byEmail = contact.email && (await UserContact.findById(`email:${contact.email}`).lean());
    if (byEmail) return this.findUser(byEmail.userId);
    if (!contact.phone) return null;
    const phoneId = `phone:${contact.phone}`;
    const [byPhone, shared] = await Promise.all([
      UserContact.findById(phoneId).lean(),
      UserContact.findById(`${phoneId}:shared`).lean(),
    ]);
    return byPhone && !shared ? this.findUser(byPhone.userId) : null;
  }

  /** Enters the contacts of users stored without them (a scan, libs/backfills). */
  async enterStoredContacts(pass: BackfillPass): Promise<void> {
    const { User, UserContact } = this.models();
    const records = passRecordsIn(UserContact, { userId: CONTACTS_FILLED });
    await runPass(pass, records, CONTACTS_FILLED, async (since) => {
      const stored = User.find(storedSince('createdAt', since), { email: 1, phone: 1 })
        .lean()
        .cursor();
      for await (const user of stored) await this.enterContacts(user);
    });
  }

  /** Newest first (by id among users made in one millisecond, so that pages do not overlap), optionally by e-mail. */
  findUsers(filter: { email?: string; limit: number; offset?: number }) {
    return this.models()
      .User.find(filter.email ? { email: filter.email } : {})
      .sort({ createdAt: -1, _id: -1 })
      .skip(filter.offset ?? 0)
      .limit(filter.limit)
      .lean();
  }

  /** The places of a user's active keys (a scan: an operator's call, not a hot path). */
  async activeKeyPlaces(userId: string): Promise<{ place?: number }[]> {
    const keys = await this.models().ApiKey.find({ userId, revokedAt: null }, { place: 1 }).lean();
    return keys.map((key) => ({ place: key.place ?? undefined }));
  }

  async createKey(
    fields: Pick<ApiKeyRecord, 'userId' | 'hash' | 'environment' | 'serverOnly' | 'quota'> & {
      _id: string;
      place: number;
      createdBy?: string;
      createdByTokenId?: string;
    },
  ) {
    const { _id } = fields;
    // The hash's entry first: a stored key can always be found by its hash.
    await this.models().KeyHash.create({ _id: fields.hash, keyId: _id });
    return (await this.models().ApiKey.create(markedRecorded(fields))).toObject();
  }

  /** Enters the hashes of keys stored without them (a scan, libs/backfills). */
  async enterStoredKeyHashes(pass: BackfillPass): Promise<void> {
    const { ApiKey, KeyHash } = this.models();
    const records = passRecordsIn(KeyHash, { keyId: HASHES_FILLED });
    await runPass(pass, records, HASHES_FILLED, async (since) => {
      const stored = ApiKey.find(unrecordedSince('createdAt', since), { hash: 1 }).lean().cursor();
      for await (const key of stored) {
        await insertOnce(() => KeyHash.create({ _id: key.hash, keyId: key._id }));
      }
    });
  }

  /** Newest first, a page at a time. */
  async listKeys(userId: string, page: { limit: number; offset: number }) {
    const keys = await this.models()
      .ApiKey.find({ userId })
      .sort({ createdAt: -1, _id: -1 })
      .skip(page.offset)
      .limit(page.limit)
      .lean();
    return Promise.all(keys.map((key) => this.withLastUse(key)));
  }

  /** The key with when it was last used. */
  async findKey(keyId: string) {
    const key = await this.keyById(keyId);
    return key && this.withLastUse(key);
  }

  private keyById(keyId: string) {
    return this.models().ApiKey.findById(keyId).lean();
  }

  /**
   * The key with its last use: the later of its use's and its own field's, which keys used
   * before `api_key_uses` existed have (and replicas of the version before still write).
   */
  private async withLastUse(key: ApiKeyRecord & { _id: string }) {
    const use = await this.models().KeyUse.findById(key._id).lean();
    const own = key.lastUsedAt?.getTime() ?? 0;
    return use?.at && use.at.getTime() > own ? { ...key, lastUsedAt: use.at } : key;
  }

  async findKeyByHash(hash: string) {
    const entry = await this.models().KeyHash.findById(hash).lean();
    if (!entry) return null;
    // Without its use: the gateway's lookup has no need of it, and records one after.
    const key = await this.keyById(entry.keyId);
    return key?.hash === hash ? key : null;
  }

  async revokeKey(keyId: string): Promise<void> {
    await updateByIdWhere(
      this.models().ApiKey,
      keyId,
      { revokedAt: null },
      { $set: { revokedAt: new Date() } },
    );
  }

  /**
   * Records a use now, and answers when: two at once may keep the earlier (a use is a lower
   * bound, `raiseById`).
   */
  async touchKey(keyId: string, at = new Date()): Promise<Date> {
    await raiseById(this.models().KeyUse, keyId, { at });
    return at;
  }
}

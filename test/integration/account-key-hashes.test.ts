import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { AccountStore, defineAccountModels } from '../../services/account/store';
import { isolation, openServiceDatabase } from '../support/stack';

/**
 * Keys are found by their hash's `_id` entry (decision 63). A key stored before those entries
 * existed has none: the account service enters them when it starts, once. A key's uses are
 * recorded apart from it (decision 99).
 */
const iso = isolation();
let conn: mongoose.Connection;
let store: AccountStore;
let models: ReturnType<typeof defineAccountModels>;

beforeAll(async () => {
  conn = await openServiceDatabase(iso, 'account');
  models = defineAccountModels(conn);
  await Promise.all(Object.values(models).map((m) => m.createIndexes()));
  store = new AccountStore(() => models);
});

afterAll(async () => {
  await conn?.dropDatabase();
  await conn?.close();
});

/** A staging key of `userId`'s in its `place`, stored as the service stores one. */
const createKey = (userId: string = randomUUID(), place = 0) =>
  store.createKey({
    _id: randomUUID(),
    place,
    userId,
    hash: randomUUID(),
    environment: 'staging',
    serverOnly: false,
    quota: null,
  });

it('finds a key made now, and one stored before the hash entries once they are entered', async () => {
  const made = await createKey();
  const older = { _id: randomUUID(), userId: randomUUID(), hash: randomUUID() };
  await conn.collection('api_keys').insertOne({
    ...older,
    environment: 'staging',
    serverOnly: false,
    quota: null,
    lastUsedAt: null,
    revokedAt: null,
    createdAt: new Date(),
  } as never);

  expect(await store.findKeyByHash(made.hash)).toMatchObject({ _id: made._id });
  // Its hash entered before it was stored: a pass after a rollout does not read it again.
  expect(await conn.collection('api_keys').findOne({ _id: made._id as never })).toMatchObject({
    recordedFirst: true,
  });
  expect(await store.findKeyByHash(older.hash)).toBeNull();
  await store.enterStoredKeyHashes('start');
  expect(await store.findKeyByHash(older.hash)).toMatchObject({ _id: older._id });
  expect(await store.findKeyByHash(randomUUID())).toBeNull();
});

it('keeps a revocation that races the key’s uses, and each key’s latest use', async () => {
  // A use written onto the key, racing its revocation, wrote the key back unrevoked in more
  // than half of such rounds (FerretDB writes the whole document from the copy it read).
  const userId = randomUUID();
  for (let round = 0; round < 12; round++) {
    const key = await createKey(userId, round);
    const before = Date.now();
    await Promise.all([store.revokeKey(key._id), store.touchKey(key._id), store.touchKey(key._id)]);
    const stored = await store.findKey(key._id);
    expect(stored?.revokedAt).toBeInstanceOf(Date);
    expect(stored?.lastUsedAt?.getTime()).toBeGreaterThanOrEqual(before);
  }
  const listed = await store.listKeys(userId, { limit: 20, offset: 0 });
  expect(listed).toHaveLength(12);
  expect(listed.every((key) => key.revokedAt && key.lastUsedAt)).toBe(true);
});

it('shows the later of a key’s recorded use and its own field (keys used before uses were kept)', async () => {
  const key = await createKey();
  const [earlier, later] = [new Date(Date.now() - 60_000), new Date()];
  const own = (lastUsedAt: Date) =>
    conn.collection('api_keys').updateOne({ _id: key._id as never }, { $set: { lastUsedAt } });
  await own(earlier);
  expect((await store.findKey(key._id))?.lastUsedAt).toEqual(earlier);
  await store.touchKey(key._id, later);
  expect((await store.findKey(key._id))?.lastUsedAt).toEqual(later);
  // A replica of the version before recorded a later use on the key itself.
  const latest = new Date(later.getTime() + 1_000);
  await own(latest);
  expect((await store.listKeys(key.userId, { limit: 5, offset: 0 }))[0].lastUsedAt).toEqual(latest);
});

it('enters the contacts of users stored before them: all at the first pass, then what came since', async () => {
  const storeOld = async (email: string, phone: string) => {
    const id = randomUUID();
    await conn.collection('users').insertOne({
      _id: id as never,
      name: 'Old',
      email,
      phone,
      profileId: randomUUID(),
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    return id;
  };
  const first = await storeOld('old.first@example.com', '+2348031110011');
  expect(await store.userByContact({ email: 'old.first@example.com' })).toBeNull();
  await store.enterStoredContacts('start');
  expect(await store.userByContact({ email: 'old.first@example.com' })).toMatchObject({
    _id: first,
  });
  // Stored by a replica of the version before, during the rollout; a later start passes by.
  const later = await storeOld('old.later@example.com', '+2348031110011');
  await store.enterStoredContacts('start');
  expect(await store.userByContact({ email: 'old.later@example.com' })).toBeNull();
  await store.enterStoredContacts('after-rollout');
  await store.enterStoredContacts('after-rollout');
  expect(await store.userByContact({ email: 'old.later@example.com' })).toMatchObject({
    _id: later,
  });
  // The two share a phone: it names neither.
  expect(await store.userByContact({ phone: '+2348031110011' })).toBeNull();
});

it('names nobody by a phone another user has when a creation stops before its contacts are entered', async () => {
  const phone = '+2348031110021';
  const first = await store.createUser({ name: 'First', email: 'first.holder@example.com', phone });
  // The second user is stored; entering its contacts fails (the database busy).
  const entering = jest
    .spyOn(store, 'enterContacts')
    .mockRejectedValueOnce(new Error('database is busy'));
  await expect(
    store.createUser({ name: 'Second', email: 'second.sharer@example.com', phone }),
  ).rejects.toThrow('database is busy');
  entering.mockRestore();
  // A delivery for the second, by their phone and an e-mail not entered: not the first's.
  expect(await store.userByContact({ email: 'second.sharer@example.com', phone })).toBeNull();
  expect(await store.userByContact({ phone })).toBeNull();
  expect(await store.userByContact({ email: 'first.holder@example.com' })).toMatchObject({
    _id: first._id,
  });
});

it('never links a later user of a phone to the deliveries of one stored before its contacts were entered', async () => {
  const phone = '+2348031110031';
  // The first user is stored; entering its contacts fails (the process stopped, the database busy).
  const entering = jest
    .spyOn(store, 'enterContacts')
    .mockRejectedValueOnce(new Error('database is busy'));
  await expect(
    store.createUser({ name: 'First', email: 'first.unentered@example.com', phone }),
  ).rejects.toThrow('database is busy');
  entering.mockRestore();
  await store.createUser({ name: 'Later', email: 'later.holder@example.com', phone });
  // A delivery for the first, by their e-mail (not entered) and phone: not the later user's.
  expect(await store.userByContact({ email: 'first.unentered@example.com', phone })).toBeNull();
  expect(await store.userByContact({ phone })).toBeNull();
});

it('gives back the phone of a creation refused: its next user is linked by it', async () => {
  const phone = '+2348031110041';
  // Refused for its e-mail: another user's, whose contacts were not entered yet.
  const refused = new mongoose.mongo.MongoServerError({
    code: 11000,
    errmsg: 'E11000 duplicate key',
  });
  const storing = jest.spyOn(models.User, 'create').mockRejectedValueOnce(refused);
  await expect(
    store.createUser({ name: 'Refused', email: 'refused.creation@example.com', phone }),
  ).rejects.toBe(refused);
  storing.mockRestore();
  expect(
    await conn.collection('user_contacts').countDocuments({ _id: `phone:${phone}` as never }),
  ).toBe(0);
  const user = await store.createUser({ name: 'Next', email: 'next.owner@example.com', phone });
  expect(await store.userByContact({ phone })).toMatchObject({ _id: user._id });
});

it('keeps the phone of a creation that failed otherwise, for the next creation of its e-mail', async () => {
  const phone = '+2348031110081';
  const fields = { name: 'Failed', email: 'failed.creation@example.com', phone };
  // Not a refusal: whether the write landed is not known.
  const storing = jest
    .spyOn(models.User, 'create')
    .mockRejectedValueOnce(new Error('database is busy'));
  await expect(store.createUser(fields)).rejects.toThrow('database is busy');
  storing.mockRestore();
  expect(
    await conn.collection('user_contacts').countDocuments({ _id: `phone:${phone}` as never }),
  ).toBe(1);
  // Sent again, it is stored, and takes the phone over from the claim never stored.
  const user = await store.createUser(fields);
  expect(await store.userByContact({ phone })).toMatchObject({ _id: user._id });
});

describe('a creation sent again', () => {
  it('after an error that came once its user was stored: refused, the phone still links them', async () => {
    const phone = '+2348031110051';
    const fields = { name: 'Again', email: 'sent.again@example.com', phone };
    const entering = jest
      .spyOn(store, 'enterContacts')
      .mockRejectedValueOnce(new Error('database is busy'));
    await expect(store.createUser(fields)).rejects.toThrow('database is busy');
    entering.mockRestore();
    const [stored] = await store.findUsers({ email: fields.email, limit: 1 });
    await expect(store.createUser(fields)).rejects.toMatchObject({ code: 11000 });
    expect(await store.userByContact({ phone })).toMatchObject({ _id: stored._id });
  });

  it('twice at once: one stored, and the phone links them', async () => {
    const phone = '+2348031110061';
    const fields = { name: 'Twice', email: 'sent.twice@example.com', phone };
    const results = await Promise.allSettled([store.createUser(fields), store.createUser(fields)]);
    const stored = results.filter((r) => r.status === 'fulfilled');
    expect(stored).toHaveLength(1);
    expect(await store.userByContact({ phone })).toMatchObject({
      _id: (stored[0] as PromiseFulfilledResult<{ _id: string }>).value._id,
    });
  });

  it('whose write was applied though it answered an error: the phone stays theirs', async () => {
    const phone = '+2348031110071';
    const fields = { name: 'Applied', email: 'applied.anyway@example.com', phone };
    const create = models.User.create.bind(models.User);
    const storing = jest.spyOn(models.User, 'create').mockImplementationOnce((async (
      doc: unknown,
    ) => {
      await create(doc as never);
      throw new Error('operation timed out');
    }) as never);
    await expect(store.createUser(fields)).rejects.toThrow('operation timed out');
    storing.mockRestore();
    expect(await store.findUsers({ email: fields.email, limit: 1 })).toHaveLength(1);
    // A later user of the phone shares it: it links neither, never the later one alone.
    await store.createUser({ name: 'Later', email: 'later.phone@example.com', phone });
    expect(await store.userByContact({ email: fields.email, phone })).toBeNull();
    expect(await store.userByContact({ phone })).toBeNull();
  });
});

it('enters a phone claimed for its e-mail by a creation never stored, however many enter it at once', async () => {
  const phone = '+2348031110091';
  const email = 'entered.twice@example.com';
  // Left by a creation of this e-mail whose write never landed.
  await conn.collection<{ _id: string }>('user_contacts').insertOne({
    _id: `phone:${phone}`,
    userId: randomUUID(),
    email,
  } as never);
  const userId = randomUUID();
  await conn.collection<{ _id: string }>('users').insertOne({
    _id: userId,
    name: 'Entered',
    email,
    phone,
    profileId: randomUUID(),
    createdAt: new Date(),
    updatedAt: new Date(),
  } as never);
  // A repeat's 409 and the backfill entering the stored user's contacts at the same moment.
  const user = { _id: userId, email, phone };
  await Promise.all([
    store.enterContacts(user),
    store.enterContacts(user),
    store.enterContacts(user),
  ]);
  expect(await store.userByContact({ phone })).toMatchObject({ _id: userId });
});

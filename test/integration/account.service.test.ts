import { randomUUID } from 'node:crypto';
import type { ServiceBroker } from 'moleculer';
import { API_KEY_REVOKED_EVENT } from '../../libs/contracts/account';
import { credentialHash } from '../../libs/issued-tokens';
import { AccountStore } from '../../services/account/store';
import { eventually } from '../support/eventually';
import { dropDatabases, inProcessBroker, isolation, openServiceDatabase } from '../support/stack';

/** The account service on a broker in this process, against the real MongoDB-compatible server. */
const iso = isolation();
let broker: ServiceBroker;
const revoked: unknown[] = [];

beforeAll(async () => {
  ({ broker } = inProcessBroker(iso, ['account']));
  broker.createService({
    name: 'listener',
    events: {
      [API_KEY_REVOKED_EVENT]: (ctx: { params: unknown }) => void revoked.push(ctx.params),
    },
  });
  await broker.start();
});

afterAll(async () => {
  await broker?.stop();
  await dropDatabases(iso);
});

const user = (email: string) => ({ name: 'Chi', email, phone: '+2347012345678' });

describe('account service', () => {
  it('lists users a page at a time, newest first, the pages adding up to one list', async () => {
    for (let i = 0; i < 5; i++) {
      await broker.call('account.createUser', user(`page-${i}-${randomUUID()}@example.com`));
    }
    const ids = async (page: { limit: number; offset?: number }) =>
      (await broker.call<{ id: string }[], object>('account.findUsers', page)).map((u) => u.id);
    const all = await ids({ limit: 5 });
    expect(all).toHaveLength(5);
    expect([
      ...(await ids({ limit: 2, offset: 0 })),
      ...(await ids({ limit: 2, offset: 2 })),
      ...(await ids({ limit: 2, offset: 4 })),
    ]).toEqual(all.concat(await ids({ limit: 1, offset: 5 })));
    await expect(broker.call('account.findUsers', { offset: -1 })).rejects.toMatchObject({
      code: 400,
    });
  });

  it('lets exactly one of many concurrent creations of one e-mail win', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => broker.call('account.createUser', user('race@example.com'))),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(7);
    for (const r of lost) expect(r.reason).toMatchObject({ code: 409, type: 'CONFLICT' });
  });

  it('resolves a key by the hash of its plaintext, with its user', async () => {
    const u = await broker.call<{ id: string }, unknown>(
      'account.createUser',
      user('k@example.com'),
    );
    const key = await broker.call<{ id: string; key: string }, unknown>('account.createApiKey', {
      userId: u.id,
      quota: { limit: 3, windowSeconds: 10 },
    });
    const resolved = await broker.call('account.resolveApiKey', { hash: credentialHash(key.key) });
    expect(resolved).toMatchObject({
      id: key.id,
      userId: u.id,
      serverOnly: true,
      quota: { limit: 3, windowSeconds: 10 },
      revokedAt: null,
      user: { id: u.id, email: 'k@example.com' },
    });
    expect(await broker.call('account.resolveApiKey', { hash: 'f'.repeat(64) })).toBeNull();
  });

  it('resolves a key even when its use cannot be recorded (the database busy)', async () => {
    const u = await broker.call<{ id: string }, unknown>(
      'account.createUser',
      user('busy@example.com'),
    );
    const key = await broker.call<{ id: string; key: string }, unknown>('account.createApiKey', {
      userId: u.id,
    });
    const touch = jest
      .spyOn(AccountStore.prototype, 'touchKey')
      .mockRejectedValue(Object.assign(new Error('database busy'), { code: 503 }));
    try {
      const resolved = await broker.call<{ id: string; lastUsedAt: string }, unknown>(
        'account.resolveApiKey',
        { hash: credentialHash(key.key) },
      );
      expect(resolved.id).toBe(key.id);
      expect(Date.parse(resolved.lastUsedAt)).not.toBeNaN();
      expect(touch).toHaveBeenCalledTimes(1);
    } finally {
      touch.mockRestore();
    }
  });

  it('broadcasts a revocation with the hash so gateways can drop it', async () => {
    const u = await broker.call<{ id: string }, unknown>(
      'account.createUser',
      user('r@example.com'),
    );
    const key = await broker.call<{ id: string; key: string }, unknown>('account.createApiKey', {
      userId: u.id,
    });
    await broker.call('account.revokeApiKey', { keyId: key.id });
    await eventually(() =>
      expect(revoked).toContainEqual({ keyId: key.id, hash: credentialHash(key.key) }),
    );
    const resolved = await broker.call<{ revokedAt: string }, unknown>('account.resolveApiKey', {
      hash: credentialHash(key.key),
    });
    expect(resolved.revokedAt).toEqual(expect.any(String));
  });

  describe('a user found by contact', () => {
    type Found = { id: string } | null;
    const byContact = (contact: { email?: string; phone?: string }) =>
      broker.call<Found, typeof contact>('account.userByContact', contact);

    it('finds a user by e-mail in any case, or by a phone only one user has', async () => {
      const ada = await broker.call<{ id: string }, unknown>('account.createUser', {
        name: 'Ada',
        email: 'ada.contact@example.com',
        phone: '+2348031110001',
      });
      expect(await byContact({ email: 'ADA.Contact@example.com' })).toMatchObject({ id: ada.id });
      expect(await byContact({ phone: '+2348031110001' })).toMatchObject({ id: ada.id });
      // The e-mail decides when it names someone; an unknown one falls back to the phone.
      expect(
        await byContact({ email: 'nobody@example.com', phone: '+2348031110001' }),
      ).toMatchObject({ id: ada.id });
      expect(await byContact({ email: 'nobody@example.com' })).toBeNull();
      expect(await byContact({ phone: '+2348031110009' })).toBeNull();
    });

    it('names nobody by a phone two users share, however many at once', async () => {
      const phone = '+2348031110002';
      const made = await Promise.all(
        ['s1', 's2', 's3'].map((name) =>
          broker.call<{ id: string }, unknown>('account.createUser', {
            name,
            email: `${name}.shared@example.com`,
            phone,
          }),
        ),
      );
      expect(await byContact({ phone })).toBeNull();
      expect(await byContact({ email: 's2.shared@example.com', phone })).toMatchObject({
        id: made[1]?.id,
      });
    });

    it('enters the contacts of a user stored without them when its creation is repeated', async () => {
      const conn = await openServiceDatabase(iso, 'account');
      try {
        const id = randomUUID();
        // As a creation stopped between storing the user and entering its contacts leaves it.
        await conn.collection('users').insertOne({
          _id: id as never,
          name: 'Half',
          email: 'half.made@example.com',
          phone: '+2348031110004',
          profileId: randomUUID(),
          createdAt: new Date(),
          updatedAt: new Date(),
        });
        expect(await byContact({ email: 'half.made@example.com' })).toBeNull();
        await expect(
          broker.call('account.createUser', user('half.made@example.com')),
        ).rejects.toMatchObject({ code: 409 });
        expect(await byContact({ email: 'half.made@example.com' })).toMatchObject({ id });
        expect(await byContact({ phone: '+2348031110004' })).toMatchObject({ id });
      } finally {
        await conn.close();
      }
    });

    it('refuses a call that names no contact', async () => {
      await expect(byContact({})).rejects.toMatchObject({ code: 400 });
    });
  });

  it('validates internal calls too', async () => {
    await expect(broker.call('account.resolveApiKey', { hash: 'nope' })).rejects.toMatchObject({
      code: 400,
      type: 'VALIDATION_ERROR',
    });
  });
});

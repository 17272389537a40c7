import { randomUUID } from 'node:crypto';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';
import { openServiceDatabase } from '../support/stack';
import { DELETED } from '../../services/package/store';

const CDN = 'https://cdn.waybill.test';
const MAX_OPEN = 40;
const stack = useMerchantStack({
  internal: ['package'],
  env: { CDN_BASE_URL: CDN, PACKAGE_MAX_OPEN: String(MAX_OPEN) },
});

const as = (who: { key: string }) => ({ 'api-key': who.key });
const save = (who: { key: string }, json: unknown) =>
  request(stack.node.url, 'POST', '/api/package', { headers: as(who), json });
const list = (who: { key: string }) =>
  request(stack.node.url, 'GET', '/api/packages', { headers: as(who) });

const shoes = {
  packageType: 'Fashion',
  name: 'Running shoes',
  description: 'Two pairs, size 42',
  quantity: 2,
  size: 'MEDIUM',
  value: 45000.5,
  image: `${CDN}/uploads/9b2d4f6a-1c3e-4a5b-8c7d-0e1f2a3b4c5d/3f1c2a9e-7a0b-4c1d-9e2f-0a1b2c3d4e5f.jpg`,
};

describe('POST /api/package', () => {
  it('creates a package with derived weight and decimal strings', async () => {
    const reply = await save(stack.alice, shoes);
    expect(reply.status).toBe(201);
    expect(reply.body.message).toBe('Package saved');
    expect(reply.body.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      userId: stack.alice.userId,
      p2pDeliveryId: null,
      errandDeliveryId: null,
      errandStoreId: null,
      productId: null,
      variantCombinationId: null,
      packageType: 'Fashion',
      name: 'Running shoes',
      image: shoes.image,
      description: 'Two pairs, size 42',
      quantity: 2,
      weight: '14.00000',
      value: '45000.50',
      size: 'MEDIUM',
      type: 'PACKAGE_ITEM',
      selectedOptions: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      deletedAt: null,
    });
  });

  it('edits only the fields sent, and recomputes the weight', async () => {
    const created = (await save(stack.alice, shoes)).body.data;
    const edited = await save(stack.alice, { packageId: created.id, quantity: 3, size: 'LARGE' });
    expect(edited.status).toBe(201);
    expect(edited.body.data).toMatchObject({
      id: created.id,
      name: 'Running shoes',
      quantity: 3,
      size: 'LARGE',
      weight: '45.00000',
      value: '45000.50',
    });
  });

  it.each([
    ['a missing required field', { ...shoes, name: undefined }, 'name'],
    ['a weight', { ...shoes, weight: 3 }, 'weight'],
    ['a long description', { ...shoes, description: 'x'.repeat(129) }, 'description'],
    ['a zero quantity', { ...shoes, quantity: 0 }, 'quantity'],
    ['a fractional quantity', { ...shoes, quantity: 1.5 }, 'quantity'],
    ['an unknown size', { ...shoes, size: 'HUGE' }, 'size'],
    ['a negative value', { ...shoes, value: -1 }, 'value'],
    ['an image on another host', { ...shoes, image: 'https://evil.example/x.jpg' }, 'image'],
    [
      'an http image',
      { ...shoes, image: `${CDN.replace('https', 'http')}/uploads/a.jpg` },
      'image',
    ],
    ['a traversal in the image', { ...shoes, image: `${CDN}/uploads/../secret` }, 'image'],
    // The file service could never serve these: the rule is its own (libs/contracts/file).
    ['an image that names no uploaded file', { ...shoes, image: `${CDN}/foo.jpg` }, 'image'],
    ['an image with a query string', { ...shoes, image: `${shoes.image}?download=1` }, 'image'],
    [
      'an image URL over 512 characters',
      { ...shoes, image: `${CDN}/${'a'.repeat(500)}.jpg` },
      'image',
    ],
    ['a control character in the name', { ...shoes, name: 'Shoes\u0000' }, 'name'],
    ['a lone surrogate in the type', { ...shoes, packageType: 'Fashion \ud800' }, 'packageType'],
    ['an empty edit', { packageId: randomUUID() }, 'body'],
    // What the document states is what is taken (decision 36).
    ['a size in lower case', { ...shoes, size: 'medium' }, 'size'],
    ['a quantity sent as a string', { ...shoes, quantity: '2' }, 'quantity'],
    ['a value with more than two decimals', { ...shoes, value: 1.005 }, 'value'],
    [
      'a type of 61 characters, counted as sent',
      { ...shoes, packageType: `${'a'.repeat(60)} ` },
      'packageType',
    ],
  ])('refuses %s with 400', async (_case, body, field) => {
    const reply = await save(stack.alice, body);
    expectErrorEnvelope(reply, 400);
    const fields = reply.body.errors.map((e: { field: string }) => e.field);
    expect(field === 'body' ? fields.length : fields).toEqual(field === 'body' ? 1 : [field]);
  });

  it('counts characters, not UTF-16 units: 60 emoji make a type of 60', async () => {
    const reply = await save(stack.alice, { ...shoes, packageType: '📦'.repeat(60) });
    expect(reply.status).toBe(201);
    expect(reply.body.data.packageType).toBe('📦'.repeat(60));
  });

  it('says why an image URL is not an uploaded file, and how to make one', async () => {
    const reply = await save(stack.alice, { ...shoes, image: `${CDN}/foo.jpg` });
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors[0].message).toMatch(
      /uploaded file .*not a hosted file path .*POST \/file\/single-upload/,
    );
  });

  it('keeps both of two edits of different fields sent at once, every time', async () => {
    // FerretDB writes an edit as the whole package it read: one of two edits at once was lost
    // (its value gone, and with it the cash a courier collects and the insurance priced).
    for (let round = 0; round < 10; round++) {
      const created = (await save(stack.alice, shoes)).body.data;
      const value = 1000 + round;
      const edits = await Promise.all([
        save(stack.alice, { packageId: created.id, value }),
        save(stack.alice, { packageId: created.id, size: 'LARGE' }),
        save(stack.alice, { packageId: created.id, name: `Boots ${round}` }),
      ]);
      expect(edits.map((e) => e.status)).toEqual([201, 201, 201]);
      const now = (await list(stack.alice)).body.data.find(
        (p: { id: string }) => p.id === created.id,
      );
      expect(now).toMatchObject({
        value: value.toFixed(2),
        size: 'LARGE',
        name: `Boots ${round}`,
        weight: '30.00000',
      });
    }
  });

  it("treats another user's package as missing", async () => {
    const mine = (await save(stack.alice, shoes)).body.data;
    const reply = await save(stack.bob, { packageId: mine.id, name: 'Stolen' });
    expectErrorEnvelope(reply, 404, /not found/);
    expectErrorEnvelope(
      await request(stack.node.url, 'DELETE', `/api/package/${mine.id}`, {
        headers: as(stack.bob),
      }),
      404,
    );
    expect((await list(stack.bob)).body.data.map((p: { id: string }) => p.id)).not.toContain(
      mine.id,
    );
  });
});

describe('DELETE /api/package/:packageId and GET /api/packages', () => {
  it('soft-deletes with 204 and hides deleted packages', async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    const reply = await request(stack.node.url, 'DELETE', `/api/package/${pkg.id}`, {
      headers: as(stack.alice),
    });
    expect(reply.status).toBe(204);
    expect(reply.text).toBe('');
    expect((await list(stack.alice)).body.data.map((p: { id: string }) => p.id)).not.toContain(
      pkg.id,
    );
    expectErrorEnvelope(await save(stack.alice, { packageId: pkg.id, name: 'Back' }), 404);
  });

  it('finishes a delete that stopped after its claim: the retry answers 204 and the package goes', async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    // What a delete leaves when its process stops between the claim and the mark.
    const db = await openServiceDatabase(stack.iso, 'package');
    try {
      await db
        .collection<{ _id: string; holder: string; userId: string; recordedFirst: boolean }>(
          'package_claims',
        )
        .insertOne({
          _id: pkg.id,
          holder: DELETED,
          userId: stack.alice.userId,
          recordedFirst: true,
        });
    } finally {
      await db.close();
    }
    const retried = await request(stack.node.url, 'DELETE', `/api/package/${pkg.id}`, {
      headers: as(stack.alice),
    });
    expect(retried.status).toBe(204);
    expect((await list(stack.alice)).body.data.map((p: { id: string }) => p.id)).not.toContain(
      pkg.id,
    );
    const again = await request(stack.node.url, 'DELETE', `/api/package/${pkg.id}`, {
      headers: as(stack.alice),
    });
    expectErrorEnvelope(again, 404);
  });
});

describe('a package whose claim is written and its mark not yet', () => {
  /** A claim as a delivery's assign (or a delete) writes it before it marks the package. */
  async function claimOnly(packageId: string, holder: string) {
    const db = await openServiceDatabase(stack.iso, 'package');
    try {
      await db
        .collection<{ _id: string; holder: string; userId: string; recordedFirst: boolean }>(
          'package_claims',
        )
        .insertOne({ _id: packageId, holder, userId: stack.alice.userId, recordedFirst: true });
    } finally {
      await db.close();
    }
  }
  const remove = (packageId: string) =>
    request(stack.node.url, 'DELETE', `/api/package/${packageId}`, { headers: as(stack.alice) });

  it('names the delivery that claimed it, in the refusals of a delete and an edit', async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    const deliveryId = randomUUID();
    await claimOnly(pkg.id, deliveryId);
    for (const reply of [
      await remove(pkg.id),
      await save(stack.alice, { packageId: pkg.id, name: 'x' }),
    ]) {
      expectErrorEnvelope(
        reply,
        400,
        /is assigned to a delivery and can no longer be (deleted|edited)$/,
      );
      expect(reply.body.errors).toEqual([
        { field: 'packageId', message: `assigned to delivery ${deliveryId}` },
      ]);
    }
  });

  it('asks for the DELETE again when a delete stopped between its claim and its mark', async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    await claimOnly(pkg.id, DELETED);
    const edit = await save(stack.alice, { packageId: pkg.id, name: 'x' });
    expectErrorEnvelope(
      edit,
      400,
      `Package ${pkg.id} is being deleted and can no longer be edited; send DELETE /api/package/${pkg.id} again to finish deleting it`,
    );
    expect(edit.body.errors).toEqual([{ field: 'packageId', message: 'being deleted' }]);
    expect((await remove(pkg.id)).status).toBe(204);
    expectErrorEnvelope(await save(stack.alice, { packageId: pkg.id, name: 'x' }), 404);
  });
});

describe('the limit of saved packages', () => {
  it('refuses one package too many until one is deleted or taken by a delivery', async () => {
    const carol = await createUserWithKey(stack.node.url);
    const saved: string[] = [];
    for (let batch = 0; batch < MAX_OPEN / 10; batch++) {
      const replies = await Promise.all(Array.from({ length: 10 }, () => save(carol, shoes)));
      for (const reply of replies) {
        expect(reply.status).toBe(201);
        saved.push(reply.body.data.id);
      }
    }
    expect((await list(carol)).body.data).toHaveLength(MAX_OPEN);

    const refused = await save(carol, shoes);
    expectErrorEnvelope(
      refused,
      400,
      /already keep 40 saved packages .* \(at most 40\); delete some/,
    );
    expect((await list(carol)).body.data).toHaveLength(MAX_OPEN);
    // Editing is not saving another one; other users are not affected.
    expect((await save(carol, { packageId: saved[0], name: 'Renamed' })).status).toBe(201);
    expect((await save(stack.bob, shoes)).status).toBe(201);

    const removed = await request(stack.node.url, 'DELETE', `/api/package/${saved[0]}`, {
      headers: as(carol),
    });
    expect(removed.status).toBe(204);
    expect((await save(carol, shoes)).status).toBe(201);
    expectErrorEnvelope(await save(carol, shoes), 400, /at most 40/);

    await stack.client.call('package.assign', {
      userId: carol.userId,
      deliveryId: randomUUID(),
      packageIds: [saved[1]],
    });
    expect((await save(carol, shoes)).status).toBe(201);
  });
});

describe('a list past the limit', () => {
  it('answers the PACKAGE_MAX_OPEN latest saved or given back when returns pass the limit', async () => {
    const dave = await createUserWithKey(stack.node.url);
    const saveTen = async () => {
      const replies = await Promise.all(Array.from({ length: 10 }, () => save(dave, shoes)));
      for (const reply of replies) expect(reply.status).toBe(201);
      return replies.map((r) => r.body.data.id as string);
    };
    // Saved ten at a time: each ten listed above the ten before.
    const first: string[][] = [];
    for (let batch = 0; batch < MAX_OPEN / 10; batch++) first.push(await saveTen());
    const deliveryId = randomUUID();
    await stack.client.call('package.assign', {
      userId: dave.userId,
      deliveryId,
      packageIds: first[0],
    });
    const later = await saveTen();
    expectErrorEnvelope(await save(dave, shoes), 400, /at most 40/);
    // Given back: ten over the limit, which saves alone never pass.
    expect(await stack.client.call('package.release', { deliveryId })).toEqual({ released: 10 });
    expectErrorEnvelope(await save(dave, shoes), 400, /already keep 50 saved packages/);

    const listed = (await list(dave)).body.data as { id: string; createdAt: string }[];
    expect(listed).toHaveLength(MAX_OPEN);
    const shown = listed.map((p) => p.id).sort();
    // Not shown: the ten listed lowest, the oldest saved of those no delivery took.
    expect(shown).toEqual([...first[0], ...first.slice(2).flat(), ...later].sort());
    const times = listed.map((p) => p.createdAt);
    expect(times).toEqual([...times].sort().reverse());
    // Still usable by id, and back in the list once others are used.
    const hidden = first[1][0];
    expect((await save(dave, { packageId: hidden, name: 'Still here' })).status).toBe(201);
    for (const id of later) {
      const removed = await request(stack.node.url, 'DELETE', `/api/package/${id}`, {
        headers: as(dave),
      });
      expect(removed.status).toBe(204);
    }
    expect((await list(dave)).body.data.map((p: { id: string }) => p.id)).toContain(hidden);
  });
});

describe('assignment to deliveries', () => {
  it('resolves a selection into totals, refusing foreign or missing ids', async () => {
    const a = (await save(stack.alice, shoes)).body.data;
    const b = (await save(stack.alice, { ...shoes, size: 'SMALL', quantity: 1, value: 1000 })).body
      .data;
    const totals = await stack.client.call<{ totalWeight: string; totalValue: string }, unknown>(
      'package.resolveSelection',
      { userId: stack.alice.userId, packageIds: [a.id, b.id] },
    );
    expect(totals).toMatchObject({ totalWeight: '16.00000', totalValue: '46000.50' });
    await expect(
      stack.client.call('package.resolveSelection', {
        userId: stack.bob.userId,
        packageIds: [a.id],
      }),
    ).rejects.toMatchObject({ code: 400, message: 'Invalid packages selection' });
  });

  it('lets exactly one of many simultaneous deliveries take a package, every time', async () => {
    for (let round = 0; round < 10; round++) {
      const contested = (await save(stack.alice, shoes)).body.data;
      const outcomes = await Promise.allSettled(
        Array.from({ length: 5 }, () =>
          stack.client.call('package.assign', {
            userId: stack.alice.userId,
            deliveryId: randomUUID(),
            packageIds: [contested.id],
          }),
        ),
      );
      expect(outcomes.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    }
  });

  it('keeps a taken package out of reach until it is released', async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    const [first, second] = [randomUUID(), randomUUID()];
    const results = await Promise.allSettled(
      [first, second].map((deliveryId) =>
        stack.client.call('package.assign', {
          userId: stack.alice.userId,
          deliveryId,
          packageIds: [pkg.id],
        }),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: 400, message: 'Invalid packages selection' });

    // Taken: not listed, not editable, not deletable; the winner may repeat itself.
    expect((await list(stack.alice)).body.data.map((p: { id: string }) => p.id)).not.toContain(
      pkg.id,
    );
    expectErrorEnvelope(await save(stack.alice, { packageId: pkg.id, name: 'x' }), 400, /assigned/);
    const del = await request(stack.node.url, 'DELETE', `/api/package/${pkg.id}`, {
      headers: as(stack.alice),
    });
    expectErrorEnvelope(del, 400, /assigned/);
    const winner = results[0].status === 'fulfilled' ? first : second;
    await expect(
      stack.client.call('package.assign', {
        userId: stack.alice.userId,
        deliveryId: winner,
        packageIds: [pkg.id],
      }),
    ).resolves.toMatchObject({ deliveryId: winner });

    await stack.client.call('package.release', { deliveryId: winner });
    expect((await list(stack.alice)).body.data.map((p: { id: string }) => p.id)).toContain(pkg.id);
  });

  it("gives back only what a delivery holds: a refused delivery's release leaves the winner's", async () => {
    const pkg = (await save(stack.alice, shoes)).body.data;
    const mine = (await save(stack.alice, shoes)).body.data;
    const [winner, loser] = [randomUUID(), randomUUID()];
    const assign = (deliveryId: string, packageIds: string[]) =>
      stack.client.call('package.assign', { userId: stack.alice.userId, deliveryId, packageIds });
    await assign(winner, [pkg.id]);
    await expect(assign(loser, [mine.id, pkg.id])).rejects.toMatchObject({ code: 400 });
    const listed = async () => (await list(stack.alice)).body.data.map((p: { id: string }) => p.id);
    expect(await listed()).toContain(mine.id);

    // The loser holds nothing; its release (a refused request's undo), repeated, frees nothing.
    for (let i = 0; i < 2; i++) {
      expect(await stack.client.call('package.release', { deliveryId: loser })).toEqual({
        released: 0,
      });
    }
    expect(await listed()).not.toContain(pkg.id);
    // The winner's repeated assign keeps its one package; its release, repeated, frees it once.
    await assign(winner, [pkg.id]);
    expect(await stack.client.call('package.release', { deliveryId: winner })).toEqual({
      released: 1,
    });
    expect(await stack.client.call('package.release', { deliveryId: winner })).toEqual({
      released: 0,
    });
    expect(await listed()).toContain(pkg.id);
    // A delivery is given the packages it first asked for, never others.
    await expect(assign(winner, [mine.id])).rejects.toMatchObject({ code: 409 });
    expect(await listed()).toContain(mine.id);
  });

  it('never lets a delivery take a package being deleted, or the reverse', async () => {
    for (let round = 0; round < 5; round++) {
      const pkg = (await save(stack.alice, shoes)).body.data;
      const [assigned, deleted] = await Promise.allSettled([
        stack.client.call('package.assign', {
          userId: stack.alice.userId,
          deliveryId: randomUUID(),
          packageIds: [pkg.id],
        }),
        request(stack.node.url, 'DELETE', `/api/package/${pkg.id}`, {
          headers: as(stack.alice),
        }).then((r) => (r.status === 204 ? r : Promise.reject(r))),
      ]);
      expect([assigned.status, deleted.status].filter((s) => s === 'fulfilled')).toHaveLength(1);
    }
  });

  it('takes all packages or none', async () => {
    const free = (await save(stack.alice, shoes)).body.data;
    const taken = (await save(stack.alice, shoes)).body.data;
    await stack.client.call('package.assign', {
      userId: stack.alice.userId,
      deliveryId: randomUUID(),
      packageIds: [taken.id],
    });
    await expect(
      stack.client.call('package.assign', {
        userId: stack.alice.userId,
        deliveryId: randomUUID(),
        packageIds: [free.id, taken.id],
      }),
    ).rejects.toMatchObject({ code: 400 });
    expect((await list(stack.alice)).body.data.map((p: { id: string }) => p.id)).toContain(free.id);
  });
});

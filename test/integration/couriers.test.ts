import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import type mongoose from 'mongoose';
import { openServiceDatabase } from '../support/stack';
import { call } from '../../libs/contracts';
import { WRITER_LEASE_MS, WRITER_WAIT_MS } from '../../libs/writer-locks';
import type { CourierView } from '../../libs/contracts/matching';
import { CLAIM_GRACE_MS } from '../../services/courier-matching/reg-no-claims';
import { MERCHANT_COURIERS_MAX } from '../../services/courier-matching/schemas';
import {
  CourierStore,
  defineMatchingModels,
  type MatchingModels,
} from '../../services/courier-matching/store';
import { credit, requestDelivery, savePackage } from '../support/deliveries';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * The courier directory (issue 12) over HTTP through the gateway, every service in one
 * process on FerretDB; internal actions through a broker of the test's own. The CDN is plain
 * http here, as in development, so that a hosted photo is told apart from an https URL.
 */
const CDN = 'http://cdn.couriers.test';
const stack = useMerchantStack({
  internal: ['courier-matching'],
  env: { CDN_BASE_URL: CDN },
});

let db: mongoose.Connection;
let models: MatchingModels;
let bike: string;
let car: string;

beforeAll(async () => {
  db = await openServiceDatabase(stack.iso, 'matching');
  models = defineMatchingModels(db);
  const types = await admin('GET', '/admin/fleet-types');
  const idOf = (code: string) =>
    (types.body.data as { id: string; code: string }[]).find((t) => t.code === code)?.id as string;
  [bike, car] = [idOf('bike'), idOf('car')];
});

afterAll(() => db?.close());

/** An admin call; answers are read as arbitrary JSON, as `request` reads them. */
const admin = (method: string, path: string, json?: unknown) =>
  request(stack.node.url, method, path, { headers: adminHeaders, json });

let plates = 0;
/** A registration number no other test uses. */
const plate = () => `TST-${process.pid % 1000}-${++plates}`;

const newCourier = (overrides: Record<string, unknown> = {}) => ({
  name: 'Tunde Bakare',
  phone: '+2348031234567',
  fleet: { typeId: bike, regNo: plate(), make: 'Bajaj', model: 'Boxer', colour: 'Red' },
  ...overrides,
});

async function createCourier(overrides: Record<string, unknown> = {}): Promise<CourierView> {
  const created = await admin('POST', '/admin/couriers', newCourier(overrides));
  expect(created.status).toBe(201);
  return created.body.data as CourierView;
}

const hostedPhoto = () => `${CDN}/uploads/${randomUUID()}/${randomUUID()}.jpg`;

describe('POST /admin/couriers', () => {
  it('creates a courier with its defaults, regNo normalized, and says where it is', async () => {
    const reply = await admin('POST', '/admin/couriers', {
      name: '  Chioma Eze ',
      phone: '+2348052345678',
      fleet: {
        typeId: car,
        regNo: '  kja-217-ab ',
        make: 'Toyota',
        model: 'Corolla',
        colour: 'Silver',
      },
    });
    expect(reply.status).toBe(201);
    expect(reply.body).toMatchObject({ success: true, message: 'Courier created' });
    const courier = reply.body.data as CourierView;
    expect(courier).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Chioma Eze',
      phone: '+2348052345678',
      profilePhoto: null,
      fleet: {
        typeId: car,
        regNo: 'KJA-217-AB',
        make: 'Toyota',
        model: 'Corolla',
        colour: 'Silver',
      },
      active: true,
      virtual: false,
      lastLocation: null,
      createdAt: expect.any(String),
      updatedAt: courier.createdAt,
    });
    expect(reply.headers.get('location')).toBe(`/admin/couriers/${courier.id}`);
    const read = await admin('GET', `/admin/couriers/${courier.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(courier);
  });

  it('takes the profile id the courier already has, once', async () => {
    const id = randomUUID();
    const courier = await createCourier({ id, active: false });
    expect(courier).toMatchObject({ id, active: false });
    const again = await admin('POST', '/admin/couriers', newCourier({ id }));
    expectErrorEnvelope(
      again,
      409,
      `A courier with id ${id} already exists; change it with PATCH /admin/couriers/${id}`,
    );
  });

  it('refuses a user’s id: the courier’s wallet would be that user’s', async () => {
    const taken = await admin('POST', '/admin/couriers', newCourier({ id: stack.alice.userId }));
    expectErrorEnvelope(
      taken,
      409,
      `${stack.alice.userId} is a user's id; give the courier another id, or none`,
    );
    expect((await admin('GET', `/admin/couriers/${stack.alice.userId}`)).status).toBe(404);

    // One a version before this refusal stored: its wallet, Alice's, is shown as neither's.
    const courier = await createCourier();
    const stored = await db.collection('couriers').findOne({ _id: courier.id as never });
    await db.collection('couriers').insertOne({
      ...stored,
      _id: stack.bob.userId as never,
      fleet: { ...stored?.fleet, regNo: plate() },
    });
    expect((await admin('GET', `/admin/couriers/${stack.bob.userId}`)).status).toBe(200);
    expectErrorEnvelope(
      await admin('GET', `/admin/couriers/${stack.bob.userId}/wallet`),
      409,
      /has a user's id, so its wallet is that user's/,
    );
    const own = await admin('GET', `/admin/couriers/${courier.id}/wallet`);
    expect(own.body.data).toMatchObject({ courierId: courier.id, balance: '0.00', entries: [] });
  });

  it('takes an https photo or a file hosted on our CDN, and nothing else', async () => {
    const https = 'https://photos.example.com/tunde.jpg';
    expect((await createCourier({ profilePhoto: https })).profilePhoto).toBe(https);
    const hosted = hostedPhoto();
    expect((await createCourier({ profilePhoto: hosted })).profilePhoto).toBe(hosted);
    for (const profilePhoto of [
      'http://photos.example.com/tunde.jpg',
      `${CDN}/elsewhere/photo.jpg`,
      'photo.jpg',
    ]) {
      const refused = await admin('POST', '/admin/couriers', newCourier({ profilePhoto }));
      expectErrorEnvelope(refused, 400);
      expect(refused.body.errors).toEqual([
        {
          field: 'profilePhoto',
          message: `profilePhoto must be an https URL as a browser writes it (a lower-case host name, a path, no user name or IP address), or the URL of a file uploaded with POST /file/single-upload (${CDN}/uploads/...)`,
        },
      ]);
    }
    for (const profilePhoto of [
      'https://photos.example.com/tündé.jpg',
      'https://x.example/a b.jpg',
    ]) {
      const unencoded = await admin('POST', '/admin/couriers', newCourier({ profilePhoto }));
      expectErrorEnvelope(
        unencoded,
        400,
        /without spaces or non-ASCII characters: percent-encode them/,
      );
    }
  });

  it('refuses bad input with every problem named, in the error envelope', async () => {
    const reply = await admin('POST', '/admin/couriers', {
      name: '',
      phone: '08031234567',
      fleet: { typeId: 'bike', regNo: 'LSD/482', make: 'Bajaj', model: 'Boxer' },
      lastLocation: { lat: 6.5, lon: 3.4 },
      rating: 5,
    });
    expectErrorEnvelope(reply, 400);
    expect(
      Object.fromEntries(
        (reply.body.errors as { field: string; message: string }[]).map((e) => [
          e.field,
          e.message,
        ]),
      ),
    ).toEqual({
      name: 'name is not allowed to be empty',
      phone: 'phone must be a valid phone number in E.164 form, like +2348012345678',
      'fleet.typeId': 'fleet.typeId must be a valid GUID',
      'fleet.regNo':
        'fleet.regNo must be letters and digits, in groups separated by one space or hyphen, like LSD-482-XY',
      'fleet.colour': 'fleet.colour is required',
      lastLocation: 'lastLocation is what the courier last reported to matching; it cannot be set',
      rating: 'rating is not allowed',
    });
    expectErrorEnvelope(await admin('POST', '/admin/couriers', {}), 400);
    expectErrorEnvelope(
      await admin('POST', '/admin/couriers', { ...newCourier(), fleet: null }),
      400,
    );
  });

  it('answers 404 Fleet type not found for a fleet type geo does not have', async () => {
    const reply = await admin(
      'POST',
      '/admin/couriers',
      newCourier({ fleet: { ...newCourier().fleet, typeId: randomUUID() } }),
    );
    expectErrorEnvelope(reply, 404, 'Fleet type not found');
  });

  it('refuses a registration number another courier has, in any case or spacing around it', async () => {
    const first = await createCourier();
    const regNo = ` ${first.fleet.regNo.toLowerCase()}  `;
    const second = await admin(
      'POST',
      '/admin/couriers',
      newCourier({ fleet: { ...newCourier().fleet, regNo } }),
    );
    expectErrorEnvelope(
      second,
      409,
      `Registration number ${first.fleet.regNo} is already registered to courier ${first.id}; a vehicle belongs to one courier: change that courier's fleet.regNo first (PATCH /admin/couriers/${first.id})`,
    );
  });

  it('creates exactly one of ten concurrent couriers with one registration number', async () => {
    const regNo = plate();
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        admin(
          'POST',
          '/admin/couriers',
          newCourier({ name: `Rider ${i}`, fleet: { ...newCourier().fleet, regNo } }),
        ),
      ),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created).toHaveLength(1);
    for (const refused of replies.filter((r) => r.status !== 201)) {
      expectErrorEnvelope(
        refused,
        409,
        /^Registration number .* is already registered to courier /,
      );
    }
    const found = await admin('GET', `/admin/couriers?regNo=${regNo}`);
    expect(found.body.data.map((c: CourierView) => c.id)).toEqual([created[0].body.data.id]);
  });

  it('gives a claim its courier never took (a crash between the writes) to the next taker after the grace', async () => {
    const claims = db.collection<{ _id: string; courierId: string; createdAt: Date }>(
      'courier_reg_nos',
    );
    const [stale, fresh] = [plate(), plate()];
    const old = new Date(Date.now() - CLAIM_GRACE_MS - 60_000);
    await claims.insertOne({ _id: stale, courierId: randomUUID(), createdAt: old });
    await claims.insertOne({ _id: fresh, courierId: randomUUID(), createdAt: new Date() });

    const taken = await createCourier({ fleet: { ...newCourier().fleet, regNo: stale } });
    expect(taken.fleet.regNo).toBe(stale);
    expect((await claims.findOne({ _id: stale }))?.courierId).toBe(taken.id);
    // A younger one may still be about to be written: refused.
    const refused = await admin(
      'POST',
      '/admin/couriers',
      newCourier({ fleet: { ...newCourier().fleet, regNo: fresh } }),
    );
    expectErrorEnvelope(refused, 409, /^Registration number .* is already registered/);
  });
});

describe('a registration number’s claim ended by several calls at once', () => {
  // FerretDB deletes `{ _id, courierId }` by reading, then deleting by `_id`: a call ending a
  // claim it read could delete the one another call had just made.
  const claims = () =>
    db.collection<{ _id: string; courierId: string; createdAt: Date }>('courier_reg_nos');
  const staleClaim = async (regNo: string, courierId = randomUUID()) => {
    const createdAt = new Date(Date.now() - CLAIM_GRACE_MS - 60_000);
    await claims().insertOne({ _id: regNo, courierId, createdAt });
    return courierId;
  };

  it('gives a stale claim’s number to one of four takers at once, in every round', async () => {
    // Before each end was claimed, two takers got one number in 17 rounds of 50.
    const store = new CourierStore(() => models);
    for (let round = 0; round < 20; round++) {
      const regNo = plate();
      await staleClaim(regNo);
      const takers = Array.from({ length: 4 }, () => randomUUID());
      const takings = await Promise.all(takers.map((id) => store.takeRegNo(regNo, id)));
      const took = takers.filter((_, i) => 'took' in takings[i] && takings[i].took);
      expect(took).toHaveLength(1);
      expect((await claims().findOne({ _id: regNo }))?.courierId).toBe(took[0]);
      // The others: held by the one who took it, or (the stale claim still being ended as they
      // looked) being registered by other requests.
      for (const taking of takings.filter((t) => !('took' in t))) {
        expect([took[0], null]).toContainEqual((taking as { heldBy: string | null }).heldBy);
      }
    }
  });

  it('keeps the claim a taker made as the number’s last courier gives it back', async () => {
    const store = new CourierStore(() => models);
    for (let round = 0; round < 20; round++) {
      const regNo = plate();
      const last = await staleClaim(regNo);
      const taker = randomUUID();
      let [taking] = await Promise.all([
        store.takeRegNo(regNo, taker),
        store.releaseRegNo(regNo, last),
        store.releaseRegNo(regNo, last),
      ]);
      // Or told it is being registered (a giving back held its end as the taker looked): the
      // taker's next try takes it.
      if (!('took' in taking)) {
        expect(taking).toEqual({ heldBy: null });
        taking = await store.takeRegNo(regNo, taker);
      }
      expect(taking).toEqual({ took: true });
      expect((await claims().findOne({ _id: regNo }))?.courierId).toBe(taker);
    }
  });
});

describe('a courier’s version (its updatedAt, the position index’s)', () => {
  it('never goes back from the change before it, whatever the clock of the replica that writes the next', async () => {
    const courier = await createCourier();
    // The change before was written by a replica whose clock ran an hour ahead.
    const ahead = new Date(Date.now() + 3_600_000);
    await models.Courier.updateOne(
      { _id: courier.id },
      { $set: { updatedAt: ahead } },
      { timestamps: false },
    );
    for (const [n, change] of [
      { name: 'Tunde B.' },
      { active: false },
      { active: true },
    ].entries()) {
      const changed = await admin('PATCH', `/admin/couriers/${courier.id}`, change);
      expect(changed.status).toBe(200);
      expect(changed.body.data.updatedAt).toBe(new Date(ahead.getTime() + n + 1).toISOString());
    }
  });
});

describe('one change of a courier at a time', () => {
  it('refuses a second change while one holds the courier, and takes over one left past its lease', async () => {
    const { edits } = new CourierStore(() => models);
    const courierId = randomUUID();
    const startedAt = Date.now();
    const at = (ms: number) => () => new Date(startedAt + ms);
    const first = await edits.acquire(courierId, at(0));
    expect(first).not.toBeNull();
    // Held: a change waits for it (5 s), then is refused.
    const waited = Date.now();
    expect(await edits.acquire(courierId, at(1_000))).toBeNull();
    expect(Date.now() - waited).toBeGreaterThanOrEqual(WRITER_WAIT_MS);
    // The first stopped without letting go: past the lease, the next change takes over.
    const next = await edits.acquire(courierId, at(WRITER_LEASE_MS));
    expect(next).not.toBeNull();
    expect(next).not.toBe(first);
    // The first's late let-go leaves the next's hold.
    await edits.release(courierId, first!);
    expect(await models.CourierEditLock.findById(courierId).lean()).toMatchObject({
      at: new Date(startedAt + WRITER_LEASE_MS),
      token: next,
    });
    await edits.release(courierId, next!);
    expect(await models.CourierEditLock.findById(courierId).lean()).toBeNull();
  });
});

describe('GET /admin/couriers', () => {
  it('pages newest first and filters by active, fleet type and registration number', async () => {
    const a = await createCourier({ fleet: { ...newCourier().fleet, typeId: car } });
    const b = await createCourier({ active: false });
    const c = await createCourier();

    const page = await admin('GET', '/admin/couriers?limit=2');
    expect(page.status).toBe(200);
    expect(page.body.data.map((x: CourierView) => x.id)).toEqual([c.id, b.id]);
    const next = await admin('GET', '/admin/couriers?limit=1&offset=2');
    expect(next.body.data.map((x: CourierView) => x.id)).toEqual([a.id]);

    const inactive = await admin('GET', '/admin/couriers?active=false');
    const inactiveIds = inactive.body.data.map((x: CourierView) => x.id);
    expect(inactiveIds).toContain(b.id);
    expect(inactive.body.data.every((x: CourierView) => !x.active)).toBe(true);
    const active = await admin('GET', '/admin/couriers?active=true&limit=500');
    expect(active.body.data.map((x: CourierView) => x.id)).not.toContain(b.id);

    const cars = await admin('GET', `/admin/couriers?fleetTypeId=${car}&limit=500`);
    expect(cars.body.data.map((x: CourierView) => x.id)).toContain(a.id);
    expect(cars.body.data.every((x: CourierView) => x.fleet.typeId === car)).toBe(true);

    const byPlate = await admin('GET', `/admin/couriers?regNo=${c.fleet.regNo.toLowerCase()}`);
    expect(byPlate.body.data).toEqual([c]);
  });

  it('refuses a bad page or filter', async () => {
    for (const query of ['limit=0', 'limit=501', 'offset=-1', 'active=maybe', 'fleetTypeId=bike']) {
      expectErrorEnvelope(await admin('GET', `/admin/couriers?${query}`), 400);
    }
  });
});

describe('GET /admin/couriers/:courierId', () => {
  it('answers 404 Courier not found, and 400 for an id that is no UUID', async () => {
    expectErrorEnvelope(
      await admin('GET', `/admin/couriers/${randomUUID()}`),
      404,
      'Courier not found',
    );
    expectErrorEnvelope(
      await admin('GET', '/admin/couriers/nope'),
      400,
      /courierId must be a valid GUID/,
    );
  });
});

describe('PATCH /admin/couriers/:courierId', () => {
  it('changes only what is sent, fleet fields included', async () => {
    const courier = await createCourier();
    const reply = await admin('PATCH', `/admin/couriers/${courier.id}`, {
      name: 'Tunde B.',
      profilePhoto: hostedPhoto(),
      fleet: { colour: 'Blue', typeId: car },
      active: false,
    });
    expect(reply.status).toBe(200);
    expect(reply.body.message).toBe('Courier updated');
    expect(reply.body.data).toMatchObject({
      name: 'Tunde B.',
      phone: courier.phone,
      fleet: { ...courier.fleet, colour: 'Blue', typeId: car },
      active: false,
      createdAt: courier.createdAt,
    });
    const cleared = await admin('PATCH', `/admin/couriers/${courier.id}`, { profilePhoto: null });
    expect(cleared.body.data.profilePhoto).toBeNull();
  });

  it('keeps an operator’s change that races the flush of the courier’s position', async () => {
    // A position written onto the courier's document undid a change made at the same instant
    // in most such rounds (FerretDB writes the whole document from the copy it read).
    const store = new CourierStore(() => models);
    const courier = await createCourier();
    for (let round = 1; round <= 12; round++) {
      const active = round % 2 === 0;
      const at = new Date();
      await Promise.all([
        store.update(courier.id, { active, name: `Round ${round}` }),
        store.writeLocations([{ courierId: courier.id, lat: 6.5, lon: 3 + round / 100, at }]),
      ]);
      const shown = (await admin('GET', `/admin/couriers/${courier.id}`)).body.data;
      expect(shown).toMatchObject({ active, name: `Round ${round}` });
      expect(shown.lastLocation).toEqual({ lat: 6.5, lon: 3 + round / 100, at: at.toISOString() });
    }
  });

  it('writes the positions of 150 couriers moved since the last flush, then moves them again', async () => {
    // Sent as one bulk write, an update of 100 statements is never answered by FerretDB 1.24,
    // which then answers nothing more on that database.
    const store = new CourierStore(() => models);
    const ids = Array.from({ length: 150 }, () => `crr_${randomUUID()}`);
    for (const lon of [3.1, 3.2]) {
      const at = new Date();
      await store.writeLocations(ids.map((courierId) => ({ courierId, lat: 6.5, lon, at })));
      const stored = await store.storedLocations(ids);
      expect(stored.size).toBe(ids.length);
      for (const id of ids) expect(stored.get(id)).toMatchObject({ lat: 6.5, lon, at });
    }
  });

  it('never writes an older position over a newer one, however the two flushes interleave', async () => {
    const store = new CourierStore(() => models);
    const ids = Array.from({ length: 30 }, () => `crr_${randomUUID()}`);
    const older = new Date(Date.now() - 60_000);
    const newer = new Date();
    const positions = (lon: number, at: Date) =>
      ids.map((courierId) => ({ courierId, lat: 6.5, lon, at }));
    const newest = new Date(newer.getTime() + 60_000);
    // Older first, then newer (two chunks of a bulk write): the newer is written over it.
    await store.writeLocations(positions(3.1, older));
    await store.writeLocations(positions(3.2, newer));
    const moved = await store.storedLocations(ids);
    expect(moved.size).toBe(ids.length);
    for (const location of moved.values()) expect(location).toMatchObject({ lon: 3.2, at: newer });
    // The newest flush first (the older one stalled), then the older: the newest stands.
    await store.writeLocations(positions(3.3, newest));
    await store.writeLocations(positions(3.1, older));
    const kept = await store.storedLocations(ids);
    expect(kept.size).toBe(ids.length);
    for (const location of kept.values()) expect(location).toMatchObject({ lon: 3.3, at: newest });
    // Both first, at once, for couriers with no position yet: the newer stands each time.
    const fresh = Array.from({ length: 30 }, () => `crr_${randomUUID()}`);
    const freshPositions = (lon: number, at: Date) =>
      fresh.map((courierId) => ({ courierId, lat: 6.5, lon, at }));
    await Promise.all([
      store.writeLocations(freshPositions(3.1, older)),
      store.writeLocations(freshPositions(3.2, newer)),
    ]);
    const stored = await store.storedLocations(fresh);
    expect(stored.size).toBe(fresh.length);
    for (const location of stored.values()) {
      expect(location).toMatchObject({ lon: 3.2, at: newer });
    }
  });

  it('moves the registration number: the old one is free, one another courier has is refused', async () => {
    const [a, b] = [await createCourier(), await createCourier()];
    const oldRegNo = a.fleet.regNo;
    const newRegNo = plate();
    const moved = await admin('PATCH', `/admin/couriers/${a.id}`, {
      fleet: { regNo: newRegNo.toLowerCase() },
    });
    expect(moved.body.data.fleet.regNo).toBe(newRegNo);
    // The same change again changes nothing.
    const again = await admin('PATCH', `/admin/couriers/${a.id}`, { fleet: { regNo: newRegNo } });
    expect(again.body.data.fleet.regNo).toBe(newRegNo);

    const taken = await admin('PATCH', `/admin/couriers/${b.id}`, { fleet: { regNo: newRegNo } });
    expectErrorEnvelope(taken, 409, new RegExp(`already registered to courier ${a.id}`));
    const freed = await admin('PATCH', `/admin/couriers/${b.id}`, { fleet: { regNo: oldRegNo } });
    expect(freed.status).toBe(200);
    expect(freed.body.data.fleet.regNo).toBe(oldRegNo);
    // b's own old number is free for a new courier.
    const reused = await createCourier({ fleet: { ...newCourier().fleet, regNo: b.fleet.regNo } });
    expect(reused.fleet.regNo).toBe(b.fleet.regNo);
  });

  it('gives one registration number to exactly one of ten couriers changed to it at once', async () => {
    const couriers = await Promise.all(Array.from({ length: 10 }, () => createCourier()));
    const regNo = plate();
    const replies = await Promise.all(
      couriers.map((c) => admin('PATCH', `/admin/couriers/${c.id}`, { fleet: { regNo } })),
    );
    expect(replies.filter((r) => r.status === 200)).toHaveLength(1);
    for (const refused of replies.filter((r) => r.status !== 200)) {
      expectErrorEnvelope(
        refused,
        409,
        /^Registration number .* is already registered to courier /,
      );
    }
    const found = await admin('GET', `/admin/couriers?regNo=${regNo}`);
    expect(found.body.data).toHaveLength(1);
    // The others kept theirs.
    const kept = await Promise.all(couriers.map((c) => admin('GET', `/admin/couriers/${c.id}`)));
    const regNos = kept.map((r) => r.body.data.fleet.regNo as string);
    expect(new Set(regNos).size).toBe(10);
    expect(regNos.filter((r) => r === regNo)).toHaveLength(1);
  });

  it('never lets two changes of one courier at once undo each other: a retirement stands', async () => {
    // FerretDB writes a change as the whole courier it read: a change of name racing a
    // retirement put the courier back to work.
    for (let round = 0; round < 10; round++) {
      const courier = await createCourier();
      const name = `Renamed ${round}`;
      const [retired, renamed] = await Promise.all([
        admin('PATCH', `/admin/couriers/${courier.id}`, { active: false }),
        admin('PATCH', `/admin/couriers/${courier.id}`, { name }),
      ]);
      for (const refused of [retired, renamed].filter((r) => r.status !== 200)) {
        expectErrorEnvelope(
          refused,
          409,
          `Courier ${courier.id} is being changed by another request; send this change again in a few seconds`,
        );
      }
      const now = (await admin('GET', `/admin/couriers/${courier.id}`)).body.data;
      expect(now.active).toBe(retired.status !== 200);
      expect(now.name).toBe(renamed.status === 200 ? name : courier.name);
      // Both answered, in turn: the one answered last shows both.
      if (retired.status === 200 && renamed.status === 200) {
        expect(now).toMatchObject({ active: false, name });
      }
    }
  });

  it('refuses an empty change, lastLocation, a missing courier or fleet type', async () => {
    const courier = await createCourier();
    const path = `/admin/couriers/${courier.id}`;
    expectErrorEnvelope(
      await admin('PATCH', path, {}),
      400,
      /Send at least one of name, phone, profilePhoto, fleet, active/,
    );
    expectErrorEnvelope(
      await admin('PATCH', path, { fleet: {} }),
      400,
      /fleet must have at least 1 key/,
    );
    expectErrorEnvelope(
      await admin('PATCH', path, { lastLocation: null }),
      400,
      /lastLocation is what the courier last reported to matching; it cannot be set/,
    );
    expectErrorEnvelope(
      await admin('PATCH', path, { active: 'no' }),
      400,
      /active must be a boolean/,
    );
    expectErrorEnvelope(
      await admin('PATCH', `/admin/couriers/${randomUUID()}`, { name: 'X' }),
      404,
      'Courier not found',
    );
    expectErrorEnvelope(
      await admin('PATCH', path, { fleet: { typeId: randomUUID() } }),
      404,
      'Fleet type not found',
    );
    expect((await admin('GET', path)).body.data).toEqual(courier);
  });
});

describe("a merchant's own courier list", () => {
  const listPath = (userId: string) => `/admin/users/${userId}/couriers`;
  const entryPath = (userId: string, courierId: string) => `${listPath(userId)}/${courierId}`;

  it('adds with 204, once however often, and lists oldest addition first', async () => {
    const { userId } = stack.alice;
    const [first, second] = [await createCourier(), await createCourier()];
    for (const courier of [first, second, first]) {
      const put = await admin('PUT', entryPath(userId, courier.id));
      expect(put.status).toBe(204);
      expect(put.text).toBe('');
    }
    const list = await admin('GET', listPath(userId));
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([first, second]);
  });

  it('keeps one entry for ten concurrent additions of one courier', async () => {
    const { userId } = stack.bob;
    const courier = await createCourier();
    const puts = await Promise.all(
      Array.from({ length: 10 }, () => admin('PUT', entryPath(userId, courier.id))),
    );
    expect(puts.map((p) => p.status)).toEqual(Array(10).fill(204));
    const list = await admin('GET', listPath(userId));
    expect(list.body.data.filter((c: CourierView) => c.id === courier.id)).toHaveLength(1);
    expect(
      await db.collection('merchant_couriers').countDocuments({ userId, courierId: courier.id }),
    ).toBe(1);
  });

  it('lists a courier removed and added again once, as its latest addition', async () => {
    const { userId } = await createMerchant();
    const [first, second] = [await createCourier(), await createCourier()];
    for (const courier of [first, second]) await admin('PUT', entryPath(userId, courier.id));
    expect((await admin('DELETE', entryPath(userId, first.id))).status).toBe(204);
    expect((await admin('GET', listPath(userId))).body.data).toEqual([second]);
    expect((await admin('PUT', entryPath(userId, first.id))).status).toBe(204);
    expect((await admin('GET', listPath(userId))).body.data).toEqual([second, first]);
  });

  it('removes with 204, then 404 as it is no longer there', async () => {
    const { userId } = stack.alice;
    const courier = await createCourier();
    expect((await admin('PUT', entryPath(userId, courier.id))).status).toBe(204);
    const removed = await admin('DELETE', entryPath(userId, courier.id));
    expect(removed.status).toBe(204);
    expect(
      (await admin('GET', listPath(userId))).body.data.map((c: CourierView) => c.id),
    ).not.toContain(courier.id);
    expectErrorEnvelope(
      await admin('DELETE', entryPath(userId, courier.id)),
      404,
      `Courier ${courier.id} is not on the list of user ${userId}; GET /admin/users/${userId}/couriers lists it`,
    );
  });

  it('keeps the link of an addition made while a late second removal of the earlier one ran', async () => {
    const store = new CourierStore(() => models);
    const { userId } = await createUserWithKey(stack.node.url);
    const courier = await createCourier();
    const path = `/admin/users/${userId}/couriers/${courier.id}`;
    expect((await admin('PUT', path)).status).toBe(204);
    const earlier = await store.linkOf(userId, courier.id);
    expect((await admin('DELETE', path)).status).toBe(204);
    expect((await admin('PUT', path)).status).toBe(204);
    const added = await store.linkOf(userId, courier.id);
    // The second removal read the earlier link before the first deleted it.
    jest.spyOn(store, 'linkOf').mockResolvedValueOnce(earlier);
    expect(await store.removeFromList(userId, courier.id)).toBeNull();
    expect(await store.linkOf(userId, courier.id)).toEqual(added);
    const listed = await admin('GET', `/admin/users/${userId}/couriers`);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toEqual([courier.id]);
  });

  it('answers 404 for a courier or a user that does not exist, 400 for ids that are no UUIDs', async () => {
    const courier = await createCourier();
    expectErrorEnvelope(
      await admin('PUT', entryPath(stack.alice.userId, randomUUID())),
      404,
      'Courier not found',
    );
    const nobody = randomUUID();
    expectErrorEnvelope(
      await admin('PUT', entryPath(nobody, courier.id)),
      404,
      `User ${nobody} not found`,
    );
    expectErrorEnvelope(await admin('GET', listPath(nobody)), 404, `User ${nobody} not found`);
    expectErrorEnvelope(
      await admin('PUT', entryPath('me', 'him')),
      400,
      /userId must be a valid GUID/,
    );
    expectErrorEnvelope(
      await admin('DELETE', entryPath(nobody, 'him')),
      400,
      /courierId must be a valid GUID/,
    );
  });

  it(`holds at most ${MERCHANT_COURIERS_MAX} couriers`, async () => {
    const { userId } = await createMerchant();
    const courier = await createCourier();
    // Links to couriers the directory does not hold: the list counts them all the same.
    const store = new CourierStore(() => models);
    for (let i = 0; i < MERCHANT_COURIERS_MAX; i++) {
      expect(await store.addToList(userId, randomUUID(), i)).toBe(true);
    }
    expectErrorEnvelope(
      await admin('PUT', entryPath(userId, courier.id)),
      409,
      `User ${userId} already has ${MERCHANT_COURIERS_MAX} couriers on its list (at most ${MERCHANT_COURIERS_MAX}); remove one with DELETE /admin/users/${userId}/couriers/:courierId first`,
    );
  });

  it(`holds ${MERCHANT_COURIERS_MAX} exactly when couriers are added at once, and one added ten times at once once`, async () => {
    const { userId } = await createMerchant();
    const store = new CourierStore(() => models);
    // Five places left (links to couriers the directory does not hold count all the same).
    for (let i = 0; i < MERCHANT_COURIERS_MAX - 5; i++) {
      await store.addToList(userId, randomUUID(), i);
    }
    const couriers = await Promise.all(Array.from({ length: 12 }, () => createCourier()));
    const added = await Promise.all(couriers.map((c) => admin('PUT', entryPath(userId, c.id))));
    expect(added.map((r) => r.status).sort()).toEqual([
      ...Array(5).fill(204),
      ...Array(7).fill(409),
    ]);
    const places = () =>
      models.MerchantCourierPlace.countDocuments({ _id: { $regex: `^${userId}:` } });
    expect(await places()).toBe(5);
    const listed = (await admin('GET', `/admin/users/${userId}/couriers`)).body.data;
    expect(listed).toHaveLength(5); // the others are not in the directory
    const removed = await admin('DELETE', entryPath(userId, listed[0].id));
    expect(removed.status).toBe(204);
    expect(await places()).toBe(4);

    // The same courier added five times at once to a list one short of full: one link, each 204.
    const full = await createMerchant();
    for (let i = 0; i < MERCHANT_COURIERS_MAX - 1; i++) {
      await store.addToList(full.userId, randomUUID(), i);
    }
    const same = await Promise.all(
      Array.from({ length: 5 }, () => admin('PUT', entryPath(full.userId, couriers[1].id))),
    );
    expect(same.map((r) => r.status)).toEqual(Array(5).fill(204));
    expect(
      await models.MerchantCourierPlace.countDocuments({ _id: { $regex: `^${full.userId}:` } }),
    ).toBe(1);
    expectErrorEnvelope(await admin('PUT', entryPath(full.userId, couriers[2].id)), 409);

    const other = await createMerchant();
    const again = await Promise.all(
      Array.from({ length: 10 }, () => admin('PUT', entryPath(other.userId, couriers[0].id))),
    );
    expect(again.map((r) => r.status)).toEqual(Array(10).fill(204));
    const list = (await admin('GET', `/admin/users/${other.userId}/couriers`)).body.data;
    expect(list.map((c: { id: string }) => c.id)).toEqual([couriers[0].id]);
    // The additions that lost to the one that stored the link gave their places back.
    expect(
      await models.MerchantCourierPlace.countDocuments({ _id: { $regex: `^${other.userId}:` } }),
    ).toBe(1);
  });
});

async function createMerchant(): Promise<{ userId: string }> {
  const user = await admin('POST', '/admin/users', {
    name: 'Full Merchant',
    email: `full-${randomUUID()}@example.com`,
    phone: '+2348012345678',
  });
  return { userId: user.body.data.id };
}

describe('internal actions (the contract the order service calls)', () => {
  it('courier-matching.getCourier answers a courier, or null', async () => {
    const courier = await createCourier({ active: false });
    expect(
      await call(stack.client, 'courier-matching.getCourier', { courierId: courier.id }),
    ).toEqual(courier);
    expect(
      await call(stack.client, 'courier-matching.getCourier', { courierId: randomUUID() }),
    ).toBeNull();
  });

  it('courier-matching.merchantCouriers answers the active couriers of the list, or all', async () => {
    const { userId } = await createMerchant();
    const [active, retired] = [await createCourier(), await createCourier()];
    for (const c of [active, retired])
      await admin('PUT', `/admin/users/${userId}/couriers/${c.id}`);
    const patched = await admin('PATCH', `/admin/couriers/${retired.id}`, { active: false });

    expect(await call(stack.client, 'courier-matching.merchantCouriers', { userId })).toEqual([
      active,
    ]);
    expect(
      await call(stack.client, 'courier-matching.merchantCouriers', { userId, activeOnly: false }),
    ).toEqual([active, patched.body.data]);
    expect(
      await call(stack.client, 'courier-matching.merchantCouriers', { userId: randomUUID() }),
    ).toEqual([]);
  });

  it('refuses bad params with a validation error', async () => {
    await expect(
      call(stack.client, 'courier-matching.getCourier', { courierId: 'x' }),
    ).rejects.toMatchObject({ type: 'VALIDATION_ERROR', code: 400 });
  });

  it('are not reachable over HTTP', async () => {
    const reply = await request(stack.node.url, 'GET', `/api/couriers/${randomUUID()}`, {
      headers: { 'api-key': stack.alice.key },
    });
    expectErrorEnvelope(reply, 404);
  });
});

describe('delivery requests read the directory (the order service, through the contract)', () => {
  async function fundedMerchant() {
    const who = await createUserWithKey(stack.node.url);
    await credit(stack.node.url, who, 100_000);
    return who;
  }
  const ask = async (who: { key: string; userId: string }, fields: Record<string, unknown>) =>
    requestDelivery(stack.node.url, who, [await savePackage(stack.node.url, who)], fields);

  it('SPECIFIC: an active courier is requested, a retired one is 404 Courier not found', async () => {
    const who = await fundedMerchant();
    const courier = await createCourier();
    const specific = { courierSelection: 'SPECIFIC', courierId: courier.id };
    expect((await ask(who, specific)).status).toBe(201);
    await admin('PATCH', `/admin/couriers/${courier.id}`, { active: false });
    expectErrorEnvelope(await ask(who, specific), 404, 'Courier not found');
  });

  it('answers a retry with its key as the first time, though its courier was retired since', async () => {
    const who = await fundedMerchant();
    const courier = await createCourier();
    const packageId = await savePackage(stack.node.url, who);
    const key = { 'Idempotency-Key': randomUUID() };
    const send = () =>
      requestDelivery(
        stack.node.url,
        who,
        [packageId],
        { courierSelection: 'SPECIFIC', courierId: courier.id },
        key,
      );
    const first = await send();
    expect(first.status).toBe(201);
    await admin('PATCH', `/admin/couriers/${courier.id}`, { active: false });
    // The gateway's record of the key is gone (its answer was lost, say): the order service
    // answers the retry from its own.
    const redis = new Redis(process.env.REDIS_URL as string);
    try {
      const kept = await redis.keys(`${stack.iso.namespace}:idempotency:*`);
      if (kept.length > 0) await redis.del(...kept);
    } finally {
      redis.disconnect();
    }
    const retried = await send();
    expect(retried.status).toBe(201);
    expect(retried.body.data.deliveryId).toBe(first.body.data.deliveryId);
  });

  it("MERCHANT_SPECIAL_COURIERS: only the merchant's active couriers count", async () => {
    const who = await fundedMerchant();
    const [retired, active] = [await createCourier({ active: false }), await createCourier()];
    const own = { courierSelection: 'MERCHANT_SPECIAL_COURIERS' };
    // Another merchant's courier is not this one's.
    await admin('PUT', `/admin/users/${stack.bob.userId}/couriers/${active.id}`);
    await admin('PUT', `/admin/users/${who.userId}/couriers/${retired.id}`);
    expectErrorEnvelope(await ask(who, own), 404, 'No merchant-specific couriers found');
    await admin('PUT', `/admin/users/${who.userId}/couriers/${active.id}`);
    expect((await ask(who, own)).status).toBe(201);
  });
});

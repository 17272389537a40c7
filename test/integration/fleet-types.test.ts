import { randomUUID } from 'node:crypto';
import { ServiceBroker } from 'moleculer';
import type mongoose from 'mongoose';
import { loadConfig } from '../../libs/config';
import { createBrokerOptions } from '../../moleculer.config';
import { FLEET_TYPES_CHANGED_EVENT } from '../../libs/contracts/geo';
import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  dropDatabases,
  isolation,
  openServiceDatabase,
  startNode,
  type NodeProcess,
} from '../support/stack';

const iso = isolation();
let node: NodeProcess;
let key: string;
let db: mongoose.Connection;

beforeAll(async () => {
  // Two geo replicas start at once: the defaults must still be seeded exactly once.
  const [first, second] = await Promise.all([
    startNode({ services: 'all', iso }),
    startNode({ services: 'geo', iso }),
  ]);
  node = first;
  await second.stop();
  ({ key } = await createUserWithKey(node.url));
  db = await openServiceDatabase(iso, 'geo');
});

afterAll(async () => {
  await db?.close();
  await node?.stop();
  await dropDatabases(iso);
});

const list = () => request(node.url, 'GET', '/api/fleet-types', { headers: { 'api-key': key } });

describe('GET /api/fleet-types', () => {
  it('lists the seeded defaults, smallest first, in the spec shape', async () => {
    const reply = await list();
    expect(reply.status).toBe(200);
    expect(reply.body.success).toBe(true);
    expect(reply.body.message).toBe('Fleet types retrieved');
    expect(reply.body.data.map((f: { name: string }) => f.name)).toEqual([
      'Bike',
      'Car',
      'Van',
      'Truck',
    ]);
    for (const item of reply.body.data) {
      expect(Object.keys(item).sort()).toEqual(['description', 'icon', 'id', 'name']);
      expect(item.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(item.icon).toBeNull();
      expect(typeof item.description).toBe('string');
    }
  });

  it('refuses unknown query parameters', async () => {
    const reply = await request(node.url, 'GET', '/api/fleet-types?active=false', {
      headers: { 'api-key': key },
    });
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors[0].field).toBe('active');
  });
});

describe('admin fleet types', () => {
  it('adds, edits and deactivates a fleet type', async () => {
    const created = await request(node.url, 'POST', '/admin/fleet-types', {
      headers: adminHeaders,
      json: {
        code: 'tricycle',
        name: 'Tricycle',
        icon: 'https://cdn.example.com/keke.png',
        description: 'Keke for market runs',
        maxWeightKg: 250.5,
        averageSpeedKmh: 25,
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      code: 'tricycle',
      maxWeight: '250.50000',
      averageSpeedKmh: 25,
      active: true,
    });
    const id = created.body.data.id;
    expect((await list()).body.data.map((f: { name: string }) => f.name)).toEqual([
      'Bike',
      'Car',
      'Tricycle',
      'Van',
      'Truck',
    ]);

    const edited = await request(node.url, 'PATCH', `/admin/fleet-types/${id}`, {
      headers: adminHeaders,
      json: { description: null, averageSpeedKmh: 22 },
    });
    expect(edited.status).toBe(200);
    expect(edited.body.data).toMatchObject({
      description: null,
      averageSpeedKmh: 22,
      name: 'Tricycle',
    });

    const off = await request(node.url, 'PATCH', `/admin/fleet-types/${id}`, {
      headers: adminHeaders,
      json: { active: false },
    });
    expect(off.body.data.active).toBe(false);
    expect((await list()).body.data.map((f: { id: string }) => f.id)).not.toContain(id);
    const all = await request(node.url, 'GET', '/admin/fleet-types', { headers: adminHeaders });
    expect(all.body.data.find((f: { id: string }) => f.id === id).active).toBe(false);

    // No ETA at an inactive type's speed: it is not found, as for an unknown id.
    const route = await request(node.url, 'POST', '/api/route', {
      headers: { 'api-key': key },
      json: { origin: 'Ikeja, Lagos', destination: 'Kano', fleetTypeId: id },
    });
    expectErrorEnvelope(route, 404, 'Fleet type not found');
    const price = () =>
      request(node.url, 'POST', '/api/pricing', {
        headers: { 'api-key': key },
        json: {
          origin: 'Ikeja, Lagos',
          destination: 'Kano',
          totalWeight: 3,
          totalValue: 20000,
          fleetTypeId: id,
        },
      });
    expectErrorEnvelope(await price(), 404, 'Fleet type not found');

    // Put back by another replica whose announcement has not arrived: the database decides
    // before a 404, in geo and in pricing alike.
    await db.collection('fleet_types').updateOne({ _id: id as never }, { $set: { active: true } });
    const again = await request(node.url, 'POST', '/api/route', {
      headers: { 'api-key': key },
      json: { origin: 'Ikeja, Lagos', destination: 'Kano', fleetTypeId: id },
    });
    expect(again.status).toBe(200);
    // Pricing reads the types again at most once a second, for every such request at once.
    await eventually(async () => expect((await price()).status).toBe(200), { timeout: 5_000 });
    expect((await list()).body.data.map((f: { id: string }) => f.id)).toContain(id);
  });

  it('answers the spec’s 404, saying what to do, to a route or a price when none is active', async () => {
    const active: { id: string }[] = (await list()).body.data;
    const setActive = (id: string, on: boolean) =>
      request(node.url, 'PATCH', `/admin/fleet-types/${id}`, {
        headers: adminHeaders,
        json: { active: on },
      });
    try {
      for (const { id } of active) expect((await setActive(id, false)).status).toBe(200);
      const trip = { origin: 'Ikeja, Lagos', destination: 'Kano' };
      const route = await request(node.url, 'POST', '/api/route', {
        headers: { 'api-key': key },
        json: trip,
      });
      const price = await request(node.url, 'POST', '/api/pricing', {
        headers: { 'api-key': key },
        json: { ...trip, totalWeight: 3, totalValue: 20000 },
      });
      for (const reply of [route, price]) {
        expectErrorEnvelope(reply, 404, 'Fleet type not found');
        expect(reply.body.errors).toEqual([
          {
            field: 'fleetTypeId',
            message:
              'none is active on this platform; an operator adds one with POST /admin/fleet-types',
          },
        ]);
      }
    } finally {
      for (const { id } of active) await setActive(id, true);
    }
  });

  it('refuses duplicates, bad values, empty edits and unknown ids', async () => {
    const dup = await request(node.url, 'POST', '/admin/fleet-types', {
      headers: adminHeaders,
      json: { code: 'bike', name: 'Another bike', maxWeightKg: 10, averageSpeedKmh: 20 },
    });
    expectErrorEnvelope(dup, 409, /bike already exists/);

    const bad = await request(node.url, 'POST', '/admin/fleet-types', {
      headers: adminHeaders,
      json: { code: 'X!', name: '', icon: 'http://insecure/icon.png', maxWeightKg: -1 },
    });
    expectErrorEnvelope(bad, 400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual([
      'averageSpeedKmh',
      'code',
      'icon',
      'maxWeightKg',
      'name',
    ]);

    const { body } = await list();
    const empty = await request(node.url, 'PATCH', `/admin/fleet-types/${body.data[0].id}`, {
      headers: adminHeaders,
      json: {},
    });
    expectErrorEnvelope(empty, 400);

    const missing = await request(node.url, 'PATCH', `/admin/fleet-types/${randomUUID()}`, {
      headers: adminHeaders,
      json: { active: false },
    });
    expectErrorEnvelope(missing, 404, 'Fleet type not found');
  });
});

describe('fleet types across replicas', () => {
  it('a change made through one geo replica reaches the others, which keep them in memory', async () => {
    const replica = await startNode({ services: 'geo', iso });
    try {
      // Both replicas answer (and so cache) the list before the change.
      await Promise.all(Array.from({ length: 6 }, () => list()));
      const created = await request(node.url, 'POST', '/admin/fleet-types', {
        headers: adminHeaders,
        json: { code: 'cargo-bike', name: 'Cargo bike', maxWeightKg: 60, averageSpeedKmh: 18 },
      });
      expect(created.status).toBe(201);
      // The gateway balances between the replicas: every answer must show the new type.
      const names = async () =>
        Promise.all(
          Array.from({ length: 6 }, async () =>
            (await list()).body.data.map((f: { name: string }) => f.name),
          ),
        );
      await eventually(
        async () => {
          const stale = (await names()).filter((n) => !n.includes('Cargo bike'));
          expect(stale).toEqual([]);
        },
        { interval: 50 },
      );
    } finally {
      await replica.stop();
    }
  });
});

describe('fleet types listed for other services', () => {
  it('are read from the database, not from a replica that has not heard of a change yet', async () => {
    const adminList = async () =>
      (await request(node.url, 'GET', '/admin/fleet-types', { headers: adminHeaders })).body
        .data as { id: string; name: string }[];
    const [first] = await adminList();
    await list(); // the public list (from memory) read before the change
    try {
      // Stored by another replica whose announcement has not arrived: only the database knows.
      await db
        .collection('fleet_types')
        .updateOne({ _id: first.id as never }, { $set: { name: 'Renamed elsewhere' } });
      // What pricing and matching fill their caches with (geo.listFleetTypes) sees it at once.
      expect((await adminList()).find((f) => f.id === first.id)?.name).toBe('Renamed elsewhere');
      // ...and this replica's memory was refreshed on the way.
      const names = (await list()).body.data.map((f: { name: string }) => f.name);
      expect(names).toContain('Renamed elsewhere');
    } finally {
      await db
        .collection('fleet_types')
        .updateOne({ _id: first.id as never }, { $set: { name: first.name } });
      await adminList(); // and this replica's memory with it
    }
  });
});

describe('fleet types written by one writer at a time', () => {
  it('keeps both of two changes of one fleet type sent at once', async () => {
    for (let round = 0; round < 5; round++) {
      const created = await request(node.url, 'POST', '/admin/fleet-types', {
        headers: adminHeaders,
        json: {
          code: `van-${round}-${randomUUID().slice(0, 8)}`,
          name: 'Van',
          maxWeightKg: 800,
          averageSpeedKmh: 40,
        },
      });
      const path = `/admin/fleet-types/${created.body.data.id}`;
      const changes = await Promise.all([
        request(node.url, 'PATCH', path, { headers: adminHeaders, json: { active: false } }),
        request(node.url, 'PATCH', path, { headers: adminHeaders, json: { name: `Van ${round}` } }),
      ]);
      expect(changes.map((c) => c.status)).toEqual([200, 200]);
      const stored = await db.collection('fleet_types').findOne({ _id: created.body.data.id });
      expect(stored).toMatchObject({ active: false, name: `Van ${round}` });
    }
  });

  it('leaves stored fleet types unwritten when a geo replica starts', async () => {
    // Its seeding wrote each default back whole (a new updatedAt): an operator's change made
    // at that moment was undone.
    const before = await db.collection('fleet_types').find({}).sort({ code: 1 }).toArray();
    const replica = await startNode({ services: 'geo', iso });
    await replica.stop();
    const after = await db.collection('fleet_types').find({}).sort({ code: 1 }).toArray();
    expect(after).toEqual(before);
  });
});

describe('fleet type change events', () => {
  const heard: unknown[] = [];
  let listener: ServiceBroker;

  beforeAll(async () => {
    // Its own broker, so that it can subscribe before it joins the namespace.
    const config = loadConfig({ ...process.env, NAMESPACE: iso.namespace, OPS_PORT: '0' });
    listener = new ServiceBroker({ ...createBrokerOptions(config), logger: false });
    listener.createService({
      name: 'fleet-listener',
      events: {
        [FLEET_TYPES_CHANGED_EVENT]: (ctx: { params: unknown }) => void heard.push(ctx.params),
      },
    });
    await listener.start();
    await listener.waitForServices(['geo']);
  });

  afterAll(async () => {
    await listener?.stop();
  });

  const patch = (fleetTypeId: string, json: unknown) =>
    request(node.url, 'PATCH', `/admin/fleet-types/${fleetTypeId}`, {
      headers: adminHeaders,
      json,
    });

  /**
   * Waits until the listener has heard of a change to `fleetTypeId` (at `heard[since]` or
   * later). Until geo has heard of the listener it broadcasts past it, so `change`, when given,
   * is made again every fifth attempt.
   */
  async function expectHeard(
    fleetTypeId: string,
    { change, since = 0 }: { change?: () => Promise<unknown>; since?: number } = {},
  ): Promise<void> {
    let attempts = 0;
    await eventually(
      async () => {
        if (change && ++attempts % 5 === 0) await change();
        expect(heard.slice(since)).toContainEqual({ fleetTypeId });
      },
      { interval: 50 },
    );
  }

  const fleetType = async (name: string) =>
    (await list()).body.data.find((f: { name: string }) => f.name === name) as {
      id: string;
      description: string;
    };

  it('broadcasts geo.fleetTypesChanged after an edit and after an addition', async () => {
    const bike = await fleetType('Bike');
    const edit = () => patch(bike.id, { description: 'Dispatch rider' });
    expect((await edit()).status).toBe(200);
    await expectHeard(bike.id, { change: edit });

    const created = await request(node.url, 'POST', '/admin/fleet-types', {
      headers: adminHeaders,
      json: { code: 'e-scooter', name: 'E-scooter', maxWeightKg: 20, averageSpeedKmh: 20 },
    });
    expect(created.status).toBe(201);
    await expectHeard(created.body.data.id);
  });

  it('broadcasts nothing for a refused change, though it does for a change made after it', async () => {
    const [bike, car] = [await fleetType('Bike'), await fleetType('Car')];
    // Edits that change nothing still announce themselves. First make sure geo reaches the
    // listener at all.
    const touchBike = () => patch(bike.id, { description: bike.description });
    const warmUp = heard.length;
    expect((await touchBike()).status).toBe(200);
    await expectHeard(bike.id, { change: touchBike, since: warmUp });

    const before = heard.length;
    const ghost = randomUUID();
    expect((await patch(ghost, { name: 'Ghost' })).status).toBe(404);
    // The marker: geo announces it over the same NATS connection, after anything the refused
    // change might have announced, so once the marker is heard that would have been too.
    expect((await patch(car.id, { description: car.description })).status).toBe(200);
    await expectHeard(car.id, { since: before });
    // Late repeats of the warm-up edit may arrive meanwhile; nothing else may.
    const others = heard
      .slice(before)
      .filter((p) => ![bike.id, car.id].includes((p as { fleetTypeId: string }).fleetTypeId));
    expect(others).toEqual([]);
  });
});

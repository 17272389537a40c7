import { randomUUID } from 'node:crypto';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

const iso = isolation();
let node: NodeProcess;
let key: string;

beforeAll(async () => {
  // Two geo replicas start at once: the defaults must still be seeded exactly once.
  const [first, second] = await Promise.all([
    startNode({ services: 'all', iso }),
    startNode({ services: 'geo', iso }),
  ]);
  node = first;
  await second.stop();
  ({ key } = await createUserWithKey(node.url));
});

afterAll(async () => {
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
      let seen: string[][] = [];
      for (let attempt = 0; attempt < 40; attempt++) {
        seen = await names();
        if (seen.every((n) => n.includes('Cargo bike'))) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(seen.every((n) => n.includes('Cargo bike'))).toBe(true);
    } finally {
      await replica.stop();
    }
  });
});

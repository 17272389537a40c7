import { FLEET_TYPES_MAX } from '../../libs/contracts/geo';
import { adminHeaders, expectErrorEnvelope, request } from '../support/http';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

/**
 * At most FLEET_TYPES_MAX fleet types exist, the defaults and inactive ones included: their
 * lists are one NATS reply each, and names and descriptions are plain text.
 */
const iso = isolation();
let node: NodeProcess;

beforeAll(async () => {
  node = await startNode({ services: 'gateway,geo', iso });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

const create = (code: string, fields: Record<string, unknown> = {}) =>
  request(node.url, 'POST', '/admin/fleet-types', {
    headers: adminHeaders,
    json: { code, name: `Type ${code}`, maxWeightKg: 10, averageSpeedKmh: 20, ...fields },
  });

it('refuses control characters in a fleet type’s name and description', async () => {
  const refused = await create('ctl', { name: 'Bike\u001b[31m', description: 'a\u0000b' });
  expectErrorEnvelope(refused, 400);
  expect(refused.body.errors).toEqual([
    { field: 'name', message: expect.stringMatching(/must be plain text/) },
    { field: 'description', message: expect.stringMatching(/must be plain text/) },
  ]);
});

it(`adds fleet types up to ${FLEET_TYPES_MAX}, inactive ones counted, and refuses one more`, async () => {
  const listed = await request(node.url, 'GET', '/admin/fleet-types', { headers: adminHeaders });
  expect(listed.status).toBe(200);
  const defaults = listed.body.data.length;
  expect(defaults).toBeGreaterThan(0);
  for (let n = defaults; n < FLEET_TYPES_MAX; n += 1) {
    const reply = await create(`type-${n}`, { active: n % 2 === 0 });
    expect(reply.status).toBe(201);
  }
  const refused = await create('one-more');
  expectErrorEnvelope(refused, 409, /At most 100 fleet types may exist, inactive ones included/);
  const all = await request(node.url, 'GET', '/admin/fleet-types', { headers: adminHeaders });
  expect(all.body.data).toHaveLength(FLEET_TYPES_MAX);
  expect(all.body.data.some((t: { code: string }) => t.code === 'one-more')).toBe(false);
});

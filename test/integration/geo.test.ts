import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServiceBroker } from 'moleculer';
import { createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  dropDatabases,
  isolation,
  startClient,
  startNode,
  type NodeProcess,
} from '../support/stack';

/**
 * Stand-ins for the external servers: OSRM (`/route/v1/driving/lon,lat;lon,lat`, always
 * 1000 km) and Nominatim (`/search`, which knows one street and nothing else).
 */
let osrm: Server;
const osrmCalls: string[] = [];
const KNOWN_STREET = { q: '7 Bourdillon Road, Ikoyi', lat: 6.4527, lon: 3.4335 };

const iso = isolation();
let node: NodeProcess;
let withOsrm: NodeProcess;
let key: string;
/** Calls the internal actions, which the gateway does not expose. */
let client: ServiceBroker;

beforeAll(async () => {
  osrm = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/search') {
      // Nominatim folds case, and the client sends the text folded (its cache key).
      const hit = url.searchParams.get('q') === KNOWN_STREET.q.toLowerCase();
      const { lat, lon } = KNOWN_STREET;
      res.end(JSON.stringify(hit ? [{ lat: String(lat), lon: String(lon) }] : []));
      return;
    }
    osrmCalls.push(req.url ?? '');
    res.end(JSON.stringify({ code: 'Ok', routes: [{ distance: 1_000_000, duration: 36_000 }] }));
  });
  await new Promise<void>((resolve) => osrm.listen(0, '127.0.0.1', resolve));
  const osrmUrl = `http://127.0.0.1:${(osrm.address() as AddressInfo).port}`;
  [node, withOsrm] = await Promise.all([
    startNode({ services: 'all', iso }),
    startNode({
      services: 'all',
      iso,
      env: { OSRM_URL: osrmUrl, GEOCODER_URL: osrmUrl, NATS_URL: '' },
    }),
  ]);
  ({ key } = await createUserWithKey(node.url));
  client = await startClient(iso, ['geo']);
});

afterAll(async () => {
  await client?.stop();
  await Promise.all([node?.stop(), withOsrm?.stop()]);
  await new Promise((resolve) => osrm?.close(resolve));
  await dropDatabases(iso);
});

const get = (path: string, base = node.url) =>
  request(base, 'GET', path, { headers: { 'api-key': key } });
const route = (json: unknown, base = node.url) =>
  request(base, 'POST', '/api/route', { headers: { 'api-key': key }, json });

/** Omitted, never null: walks a whole response body. */
function expectNoNulls(value: unknown, path = 'data'): void {
  expect(value === null ? path : 'ok').toBe('ok');
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) expectNoNulls(v, `${path}.${k}`);
  }
}

const COUNTRY_KEYS = [
  'value',
  'name',
  'type',
  'country',
  'countryCode',
  'countryCodeAlpha3',
  'continentCode',
  'continentName',
  'lat',
  'lon',
];
const STATE_KEYS = [
  'value',
  'name',
  'type',
  'state',
  'country',
  'countryCode',
  'continentCode',
  'continentName',
  'regionalZone',
  'admin1Id',
  'admin1Name',
  'lat',
  'lon',
];
const CITY_KEYS = [
  'value',
  'locationId',
  'mapPlaceId',
  'name',
  'country',
  'countryCode',
  'countryCodeAlpha3',
  'lat',
  'lon',
  'lgaOrCity',
  'state',
  'zoneOrDistrict',
  'region',
  'regionName',
  'regionalZone',
  'adminUnitName',
];

describe('GET /api/countries', () => {
  it('lists at most 50, Nigeria first, in the spec shape', async () => {
    const reply = await get('/api/countries');
    expect(reply.status).toBe(200);
    expect(reply.body.message).toBe('Countries retrieved');
    const items = reply.body.data;
    expect(items.length).toBe(50);
    expect(items[0]).toMatchObject({
      value: 'NG',
      name: 'Nigeria',
      type: 'INTER_COUNTRY',
      country: 'Nigeria',
      countryCode: 'NG',
      countryCodeAlpha3: 'NGA',
      continentCode: 'AF',
      continentName: 'Africa',
    });
    for (const item of items) {
      expect(COUNTRY_KEYS).toEqual(expect.arrayContaining(Object.keys(item)));
      expect(typeof item.lat === 'number' || item.lat === undefined).toBe(true);
    }
    expectNoNulls(items);
  });

  it('searches by prefix, ignoring case and accents', async () => {
    const reply = await get('/api/countries?search=cote%20d');
    expect(reply.body.data[0].countryCode).toBe('CI');
    expect((await get('/api/countries?search=GHA')).body.data[0].countryCode).toBe('GH');
  });
});

describe('GET /api/states', () => {
  it("lists Nigeria's 36 states and FCT by default, each with its zone", async () => {
    const { body } = await get('/api/states');
    expect(body.data).toHaveLength(37);
    const nigerian = body.data;
    expect(nigerian.every((s: { countryCode: string }) => s.countryCode === 'NG')).toBe(true);
    expect(new Set(nigerian.map((s: { regionalZone: string }) => s.regionalZone))).toEqual(
      new Set([
        'North Central',
        'North East',
        'North West',
        'South East',
        'South South',
        'South West',
      ]),
    );
    for (const item of body.data) {
      expect(Object.keys(item).sort()).toEqual([...STATE_KEYS].sort());
      expect(item.type).toBe('INTER_STATE');
    }
  });

  it("lists another country's states on request, all of them", async () => {
    const { body } = await get('/api/states?countryCode=GH');
    expect(body.data.length).toBeGreaterThan(5);
    expect(body.data.every((s: { countryCode: string }) => s.countryCode === 'GH')).toBe(true);
    // Slovenia has 212: once cut to 100 with nothing saying so.
    const slovenia = await get('/api/states?countryCode=SI');
    expect(slovenia.body.data).toHaveLength(212);
  });

  it('finds Delta at Asaba, and filters by country', async () => {
    const { body } = await get('/api/states?search=delta&countryCode=ng');
    expect(body.data).toHaveLength(1);
    expect(body.data[0]).toMatchObject({ name: 'Delta', regionalZone: 'South South' });
    expect(body.data[0].lat).toBeCloseTo(6.2, 1);
    expect(body.data[0].lon).toBeCloseTo(6.73, 1);
  });
});

describe('GET /api/cities', () => {
  it('lists at most 50 without search', async () => {
    const { body } = await get('/api/cities');
    expect(body.data).toHaveLength(50);
    expectNoNulls(body.data);
    for (const item of body.data) {
      expect(CITY_KEYS).toEqual(expect.arrayContaining(Object.keys(item)));
      expect(item.value).toBe(item.locationId);
      expect(typeof item.lat).toBe('number');
    }
  });

  it.each([
    ['ibadn', 'Ibadan', 'Oyo'],
    ['lagos', 'Lagos', 'Lagos'],
    ['kano', 'Kano', 'Kano'],
    ['ikeja', 'Ikeja', 'Lagos'],
    ['lekki', 'Lekki', 'Lagos'],
    ['yaba', 'Yaba', 'Lagos'],
    ['port harcourt', 'Port Harcourt', 'Rivers'],
    ['abuja', 'Abuja', 'Federal Capital Territory'],
  ])('"%s" finds %s first', async (search, name, state) => {
    const { body } = await get(`/api/cities?search=${encodeURIComponent(search)}`);
    expect(body.data[0]).toMatchObject({ name, state, countryCode: 'NG' });
  });

  it('refuses bad queries', async () => {
    expectErrorEnvelope(await get(`/api/cities?search=${'x'.repeat(101)}`), 400);
    expectErrorEnvelope(await get('/api/cities?countryCode=NGA'), 400);
    expectErrorEnvelope(await get('/api/countries?countryCode=NG'), 400);
  });
});

describe('POST /api/route', () => {
  it('resolves text addresses into a route with distance, ETA and type', async () => {
    const reply = await route({
      origin: '12 Admiralty Way, Lekki, Lagos',
      destination: { address: 'Wuse 2, Abuja', contactName: 'Ada', contactPhone: '+2348012345678' },
    });
    expect(reply.status).toBe(200);
    const { distance, routeType, origin, destination } = reply.body.data;
    expect(routeType).toBe('INTER_REGION');
    expect(distance.distanceKm).toBeGreaterThan(520 * 1.3 * 0.95);
    expect(Number.isInteger(distance.etaSeconds)).toBe(true);
    expect(origin).toMatchObject({ state: 'Lagos', country: 'Nigeria', resolution: 9 });
    expect(origin.h3Index).toMatch(/^89[0-9a-f]{13}$/);
    expect(origin.phrase).toMatch(/^[a-z]+\.[a-z]+\.[a-z]+$/);
    expect(origin.contactName).toBeUndefined();
    expect(destination).toMatchObject({
      state: 'Federal Capital Territory',
      regionalZone: 'North Central',
      contactName: 'Ada',
      contactPhone: '+2348012345678',
    });
    expectNoNulls(reply.body.data);
  });

  it.each([
    ['Lekki, Lagos', 'Ikeja', 'INTER_CITY'],
    ['Ikeja, Lagos', 'Abeokuta, Ogun', 'INTER_STATE'],
    ['Ikeja, Lagos', 'Kano', 'INTER_REGION'],
    ['Lagos', 'Accra, Ghana', 'INTER_COUNTRY'],
    ['Lagos', 'London, United Kingdom', 'INTER_CONTINENT'],
  ])('%s → %s is %s', async (origin, destination, routeType) => {
    const reply = await route({ origin, destination });
    expect(reply.body.data.routeType).toBe(routeType);
  });

  it('takes coordinates over text, decodes phrases, keeps extra fields, stores the note', async () => {
    const first = await route({ origin: 'Yaba, Lagos', destination: 'Ikeja' });
    const phrase = first.body.data.origin.phrase;
    const reply = await route({
      origin: {
        lat: 6.4474,
        lon: 3.4723,
        address: 'Kano',
        zipCode: '106104',
        additionalNote: 'Gate 2',
      },
      destination: phrase,
    });
    expect(reply.status).toBe(200);
    const { origin, destination } = reply.body.data;
    expect(origin).toMatchObject({
      lat: 6.4474,
      lon: 3.4723,
      state: 'Lagos',
      zipCode: '106104',
      note: 'Gate 2',
    });
    expect(origin.additionalNote).toBeUndefined();
    expect(destination.h3Index).toBe(first.body.data.origin.h3Index);
  });

  it('refuses a mistyped phrase wherever it is written, naming its word, never searching it as a place', async () => {
    const said = `destination: "orange.garden.sugr" is written as a three-word phrase, and unknown word 'sugr': check its words, or write a place with spaces or commas`;
    for (const destination of [
      'orange.garden.sugr',
      ' orange.garden.sugr ',
      { address: 'orange.garden.sugr', contactName: 'Ada' },
      { addressLine1: 'orange.garden.sugr' },
    ]) {
      const reply = await route({ origin: 'Ikeja, Lagos', destination });
      expectErrorEnvelope(reply, 400, said);
      expect(reply.body.errors).toEqual([{ field: 'destination', message: said.slice(13) }]);
    }
    // The field meant for a phrase names its own part.
    const field = await route({
      origin: 'Ikeja, Lagos',
      destination: { phrase: 'orange.garden.sugr' },
    });
    expectErrorEnvelope(field, 400, "destination.phrase: unknown word 'sugr'");
  });

  it('refuses the same place at both ends: one text, or two points in one cell', async () => {
    const text = await route({ origin: 'Ikeja, Lagos', destination: { address: 'ikeja,  LAGOS' } });
    expectErrorEnvelope(text, 400, 'Origin and destination cannot be the same');
    const point = { lat: 6.6018, lon: 3.3515 };
    const points = await route({ origin: point, destination: point });
    expectErrorEnvelope(points, 400, 'Origin and destination cannot be the same');
  });

  it('routes two different addresses known only by their city, at 0 km', async () => {
    const reply = await route({
      origin: '12 Allen Avenue, Ikeja, Lagos',
      destination: 'Computer Village, Ikeja, Lagos',
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data.distance).toMatchObject({ distanceKm: 0, etaSeconds: 0 });
  });

  it('answers the same for an earlier answer’s addresses sent back: still two places, the note kept', async () => {
    const first = await route({
      origin: { address: '12 Allen Avenue, Ikeja, Lagos', additionalNote: 'Gate 2' },
      destination: 'Computer Village, Ikeja, Lagos',
    });
    expect(first.status).toBe(200);
    const { origin, destination } = first.body.data;
    expect(origin).toMatchObject({ note: 'Gate 2', centerLat: origin.lat });
    const again = await route({ origin, destination });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    // A point the caller chose in that cell is one: the same place as another such point.
    const chosen = { ...origin, centerLat: undefined, centerLon: undefined };
    const same = await route({ origin: chosen, destination: { lat: origin.lat, lon: origin.lon } });
    expectErrorEnvelope(same, 400, 'Origin and destination cannot be the same');
  });

  it.each([
    [{ origin: '', destination: 'Ikeja' }, 'origin'],
    [{ origin: 42, destination: 'Ikeja' }, 'origin'],
    [{ origin: { lat: 91, lon: 3 }, destination: 'Ikeja' }, 'origin.lat'],
    [{ origin: { lat: 6.5 }, destination: 'Ikeja' }, 'origin'],
    [{ origin: {}, destination: 'Ikeja' }, 'origin'],
    [{ origin: 'Ikeja' }, 'destination'],
    [{ origin: 'Ikeja', destination: 'qwxzvbnm' }, 'destination'],
    [{ origin: 'Ikeja', destination: 'abandon.abandon.qzqz' }, 'destination'],
    [{ origin: 'Ikeja', destination: { mapPlaceId: 'not-a-place' } }, 'destination'],
    [{ origin: { id: '6f177c89-2c19-4ccc-9b13-2c42243961ee' }, destination: 'Ikeja' }, 'origin.id'],
    [{ origin: 'Ikeja', destination: 'Kano', fleetTypeId: 'nope' }, 'fleetTypeId'],
  ])('400 for %j naming %s', async (body, field) => {
    const reply = await route(body);
    expectErrorEnvelope(reply, 400);
    expect(reply.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it.each(['+2341234', '+99912345678', '+2342000000000', ' +2348012345678'])(
    '400 for a contactPhone %j that no numbering plan has, saying what to send',
    async (contactPhone) => {
      const reply = await route({
        origin: 'Ikeja',
        destination: { address: 'Kano', contactPhone },
      });
      expectErrorEnvelope(reply, 400);
      expect(reply.body.errors).toEqual([
        {
          field: 'destination.contactPhone',
          message:
            'destination.contactPhone must be a valid phone number in E.164 form, like +2348012345678',
        },
      ]);
    },
  );

  it('404 for an unknown fleet type', async () => {
    const reply = await route({
      origin: 'Ikeja',
      destination: 'Kano',
      fleetTypeId: '6f177c89-2c19-4ccc-9b13-2c42243961ee',
    });
    expectErrorEnvelope(reply, 404, 'Fleet type not found');
  });

  it('uses the road distance of an OSRM server when it is longer', async () => {
    const reply = await route({ origin: 'Ikeja, Lagos', destination: 'Kano' }, withOsrm.url);
    expect(reply.status).toBe(200);
    expect(reply.body.data.distance.distanceKm).toBe(1000);
    // Whether the road was measured is pricing's (geo.trip), not the API's.
    expect(Object.keys(reply.body.data).sort()).toEqual([
      'destination',
      'distance',
      'origin',
      'routeType',
    ]);
    const last = osrmCalls[osrmCalls.length - 1];
    expect(last).toMatch(/^\/route\/v1\/driving\/3\.\d+,6\.\d+;8\.\d+,1[12]\.\d+\?/);
  });

  it('asks the external geocoder first for street addresses, then the gazetteer', async () => {
    const reply = await route({ origin: KNOWN_STREET.q, destination: 'Kano' }, withOsrm.url);
    expect(reply.status).toBe(200);
    expect(reply.body.data.origin).toMatchObject({
      lat: KNOWN_STREET.lat,
      lon: KNOWN_STREET.lon,
      addressLine1: KNOWN_STREET.q,
      state: 'Lagos',
    });
    // The point of what the text named, not one the caller gave (decision 13).
    expect(reply.body.data.origin).toMatchObject({
      centerLat: KNOWN_STREET.lat,
      centerLon: KNOWN_STREET.lon,
    });
    const fallback = await route({ origin: 'Ikeja, Lagos', destination: 'Kano' }, withOsrm.url);
    expect(fallback.body.data.origin).toMatchObject({ state: 'Lagos', lgaOrCity: 'Ikeja' });
  });
});

describe('geo.findArea (internal)', () => {
  type FindArea = { countryCode: string; state?: string; lgaOrCity?: string };
  const findArea = (params: FindArea) => client.call('geo.findArea', params);

  it('answers places spelled as resolved addresses spell them', async () => {
    await expect(
      findArea({ countryCode: 'ng', state: ' LAGOS ', lgaOrCity: 'eti-osa' }),
    ).resolves.toEqual({
      countryCode: 'NG',
      country: 'Nigeria',
      state: 'Lagos',
      lgaOrCity: 'Eti Osa',
    });
    await expect(findArea({ countryCode: 'NG', state: 'FCT' })).resolves.toEqual({
      countryCode: 'NG',
      country: 'Nigeria',
      state: 'Federal Capital Territory',
    });
    await expect(findArea({ countryCode: 'NG' })).resolves.toEqual({
      countryCode: 'NG',
      country: 'Nigeria',
    });
  });

  it('agrees with the lgaOrCity of a resolved address', async () => {
    const reply = await route({
      origin: 'Port Harcourt, Rivers',
      destination: '12 Admiralty Way, Lekki, Lagos',
    });
    expect(reply.status).toBe(200);
    for (const end of [reply.body.data.origin, reply.body.data.destination]) {
      const area = await findArea({
        countryCode: end.countryCode,
        state: end.state,
        lgaOrCity: end.lgaOrCity.toLowerCase(),
      });
      expect(area).toMatchObject({ state: end.state, lgaOrCity: end.lgaOrCity });
    }
  });

  it('404s what the gazetteer does not know, with a suggestion, naming the part', async () => {
    const refusal = (field: string, message: string) => ({
      code: 404,
      message,
      data: { errors: [{ field, message }] },
    });
    await expect(findArea({ countryCode: 'XX' })).rejects.toMatchObject(
      refusal('countryCode', 'Country "XX" not found'),
    );
    await expect(findArea({ countryCode: 'NG', state: 'Lagoss' })).rejects.toMatchObject(
      refusal('state', 'State "Lagoss" not found in Nigeria; did you mean Lagos?'),
    );
    await expect(
      findArea({ countryCode: 'NG', state: 'Lagos', lgaOrCity: 'Ikejaa' }),
    ).rejects.toMatchObject(
      refusal('lgaOrCity', 'LGA or city "Ikejaa" not found in Lagos; did you mean Ikeja?'),
    );
  });

  it('refuses an LGA without its state, and malformed codes', async () => {
    const refused: FindArea[] = [
      { countryCode: 'NG', lgaOrCity: 'Ikeja' },
      { countryCode: 'NGA' },
      { countryCode: 'NG', state: 'x'.repeat(101) },
    ];
    for (const params of refused) {
      await expect(findArea(params)).rejects.toMatchObject({
        code: 400,
        type: 'VALIDATION_ERROR',
      });
    }
  });
});

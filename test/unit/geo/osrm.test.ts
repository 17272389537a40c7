import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GeoPoint } from '../../../services/geo/distance';
import {
  DEFAULT_OSRM_PROFILE,
  createOsrmClient,
  resolveRoadDistance,
  type OsrmClientOptions,
  type RoadDistanceSource,
} from '../../../services/geo/osrm';
import { DEFAULT_COOL_DOWN_MS, DEFAULT_FAILURE_THRESHOLD } from '../../../services/geo/upstream';

const lagos: GeoPoint = { lat: 6.5244, lon: 3.3792 };
const abuja: GeoPoint = { lat: 9.0765, lon: 7.3986 };

interface ReceivedRoute {
  profile: string;
  from: GeoPoint;
  to: GeoPoint;
  query: Record<string, string>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, route: ReceivedRoute | null) => void;

const ROUTE_PATH = /^\/route\/v1\/([^/]+)\/(-?[\d.]+),(-?[\d.]+);(-?[\d.]+),(-?[\d.]+)$/;

/** Parses `/route/v1/{profile}/{lon},{lat};{lon},{lat}` the way OSRM does: lon first. */
function parseRoute(rawUrl: string): ReceivedRoute | null {
  const url = new URL(rawUrl, 'http://osrm.test');
  const m = ROUTE_PATH.exec(url.pathname);
  if (!m) return null;
  const [, profile, lon1, lat1, lon2, lat2] = m.map(String);
  return {
    profile,
    from: { lat: Number(lat1), lon: Number(lon1) },
    to: { lat: Number(lat2), lon: Number(lon2) },
    query: Object.fromEntries(url.searchParams),
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/** Answers like osrm-routed: a route of `metres`, or 400 InvalidUrl for another path. */
const routeOf =
  (metres: number): Handler =>
  (_req, res, route) => {
    if (!route) {
      sendJson(res, 400, { code: 'InvalidUrl', message: 'URL string malformed' });
      return;
    }
    sendJson(res, 200, {
      code: 'Ok',
      routes: [{ distance: metres, duration: metres / 10, weight: metres / 10, legs: [] }],
      waypoints: [],
    });
  };

/** A fake OSRM whose behaviour each test sets through `handler`. */
class FakeOsrm {
  handler: Handler = routeOf(1000);
  readonly received: ReceivedRoute[] = [];
  readonly paths: string[] = [];
  private readonly server: Server = createServer((req, res) => {
    const route = parseRoute(req.url ?? '/');
    this.paths.push(req.url ?? '');
    if (route) this.received.push(route);
    this.handler(req, res, route);
  });

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get requests(): number {
    return this.paths.length;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
  }

  reset(handler: Handler): void {
    this.handler = handler;
    this.received.length = 0;
    this.paths.length = 0;
  }

  async close(): Promise<void> {
    // Drop kept-alive and never-answered sockets, or close() would wait for them.
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const osrm = new FakeOsrm();
let closedPortUrl: string;

beforeAll(async () => {
  await osrm.start();
  // A port that was just listening and is now closed: connections are refused.
  const gone = new FakeOsrm();
  await gone.start();
  closedPortUrl = gone.baseUrl;
  await gone.close();
});

afterAll(async () => {
  await osrm.close();
});

function clientWith(overrides: Partial<OsrmClientOptions> = {}) {
  const reasons: string[] = [];
  const client = createOsrmClient({
    baseUrl: osrm.baseUrl,
    timeoutMs: 2000,
    onFailure: (reason) => reasons.push(reason),
    ...overrides,
  });
  return { client, reasons };
}

describe('createOsrmClient', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_OSRM_PROFILE).toBe('driving');
    expect(DEFAULT_FAILURE_THRESHOLD).toBe(5);
    expect(DEFAULT_COOL_DOWN_MS).toBe(30_000);
  });

  it('asks for the route with lon,lat pairs and reads routes[0].distance in metres', async () => {
    osrm.reset(routeOf(760_250));
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeCloseTo(760.25, 9);

    expect(osrm.received).toEqual([
      {
        profile: 'driving',
        from: lagos,
        to: abuja,
        query: { overview: 'false', alternatives: 'false', steps: 'false' },
      },
    ]);
    expect(reasons).toEqual([]);
  });

  it('uses the configured profile and a base URL with a path prefix and trailing slash', async () => {
    osrm.reset((req, res) => {
      const route = parseRoute((req.url ?? '').replace(/^\/osrm/, ''));
      routeOf(5000)(req, res, route);
    });
    const { client, reasons } = clientWith({ baseUrl: `${osrm.baseUrl}/osrm/`, profile: 'bike' });

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(5);
    expect(osrm.paths).toHaveLength(1);
    expect(osrm.paths[0]).toMatch(
      /^\/osrm\/route\/v1\/bike\/3\.379200,6\.524400;7\.398600,9\.076500\?/,
    );
    expect(reasons).toEqual([]);
  });

  it('accepts a zero-length route', async () => {
    osrm.reset(routeOf(0));
    const { client } = clientWith();
    await expect(client.roadDistanceKm(lagos, lagos)).resolves.toBe(0);
  });

  it('answers null and reports the status on a 500', async () => {
    osrm.reset((_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('Internal Server Error');
    });
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/HTTP 500.*Internal Server Error/)]);
  });

  it.each([200, 400])('answers null and reports the code on NoRoute (HTTP %p)', async (status) => {
    osrm.reset((_req, res) =>
      sendJson(res, status, { code: 'NoRoute', message: 'Impossible route between points' }),
    );
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/NoRoute.*Impossible route/)]);
  });

  it('answers null on malformed JSON', async () => {
    osrm.reset((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"code":"Ok","routes":[{"distance":');
    });
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/not JSON/)]);
  });

  it.each<[string, unknown]>([
    ['no routes', { code: 'Ok', routes: [] }],
    ['a route without distance', { code: 'Ok', routes: [{ duration: 10 }] }],
    ['a negative distance', { code: 'Ok', routes: [{ distance: -5, duration: 10 }] }],
    ['a string distance', { code: 'Ok', routes: [{ distance: '5000' }] }],
    ['routes that is not an array', { code: 'Ok', routes: { distance: 5000 } }],
  ])('answers null on an Ok answer with %s', async (_name, body) => {
    osrm.reset((_req, res) => sendJson(res, 200, body));
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/routes\[0\]\.distance/)]);
  });

  it.each<[string, number, unknown]>([
    ['JSON without a code', 200, { routes: [{ distance: 1 }] }],
    ['a JSON array', 200, [1, 2]],
    ['code Ok on a 4xx', 404, { code: 'Ok', routes: [{ distance: 1 }] }],
  ])('answers null on %s', async (_name, status, body) => {
    osrm.reset((_req, res) => sendJson(res, status, body));
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(new RegExp(`HTTP ${status}`))]);
  });

  it('answers null on an answer over maxAnswerBytes', async () => {
    osrm.reset((_req, res) =>
      sendJson(res, 200, { code: 'Ok', routes: [{ distance: 1000, geometry: 'x'.repeat(5000) }] }),
    );
    const { client, reasons } = clientWith({ maxAnswerBytes: 4096 });

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/^HTTP 200: answer over the 4096-byte limit/)]);
  });

  it('answers null once the timeout passes when the server never answers', async () => {
    osrm.reset(() => {
      // Keeps the request open; afterAll drops the socket.
    });
    const { client, reasons } = clientWith({ timeoutMs: 200 });

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual(['timed out after 200 ms']);
  });

  it('answers null when the body stalls after the headers', async () => {
    osrm.reset((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"code":"Ok",');
    });
    const { client, reasons } = clientWith({ timeoutMs: 200 });

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual(['timed out after 200 ms']);
  });

  it('answers null when the connection is refused', async () => {
    const { client, reasons } = clientWith({ baseUrl: closedPortUrl });

    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toEqual(['request failed: ECONNREFUSED']);
  });

  it('answers null without calling the server for invalid coordinates', async () => {
    osrm.reset(routeOf(1000));
    const { client, reasons } = clientWith();

    await expect(client.roadDistanceKm({ lat: 91, lon: 0 }, abuja)).resolves.toBeNull();
    await expect(client.roadDistanceKm(lagos, { lat: 0, lon: NaN })).resolves.toBeNull();
    expect(osrm.requests).toBe(0);
    expect(reasons).toEqual([
      expect.stringMatching(/invalid coordinates/),
      expect.stringMatching(/invalid coordinates/),
    ]);
  });

  it('still answers null when onFailure throws', async () => {
    osrm.reset((_req, res) => sendJson(res, 503, { message: 'busy' }));
    const client = createOsrmClient({
      baseUrl: osrm.baseUrl,
      timeoutMs: 2000,
      onFailure: () => {
        throw new Error('logger down');
      },
    });
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
  });

  it('works without onFailure', async () => {
    const client = createOsrmClient({ baseUrl: closedPortUrl, timeoutMs: 2000 });
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
  });

  it.each<[string, Partial<OsrmClientOptions>]>([
    ['a base URL that is not a URL', { baseUrl: 'not a url' }],
    ['a base URL that is not http', { baseUrl: 'ftp://127.0.0.1' }],
    ['a base URL with a query', { baseUrl: 'http://127.0.0.1:5000?x=1' }],
    ['a profile with a slash', { profile: 'driving/../x' }],
    ['a zero timeout', { timeoutMs: 0 }],
    ['a fractional failure threshold', { failureThreshold: 1.5 }],
    ['a zero failure threshold', { failureThreshold: 0 }],
    ['a negative cool-down', { coolDownMs: -1 }],
  ])('refuses %s at creation', (_name, overrides) => {
    expect(() => clientWith(overrides)).toThrow(RangeError);
  });
});

describe('createOsrmClient circuit breaker', () => {
  const fail500: Handler = (_req, res) => {
    res.writeHead(500);
    res.end();
  };

  /** A client on a fake clock, with a threshold of 3 and a 30 s cool-down. */
  function breakerClient() {
    let clock = 1_000_000;
    const { client, reasons } = clientWith({
      failureThreshold: 3,
      coolDownMs: 30_000,
      now: () => clock,
    });
    const advance = (ms: number) => {
      clock += ms;
    };
    return { client, reasons, advance };
  }

  it('opens after N consecutive failures and skips the server during the cool-down', async () => {
    osrm.reset(fail500);
    const { client, reasons, advance } = breakerClient();

    for (let i = 0; i < 3; i++)
      await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(osrm.requests).toBe(3);
    expect(reasons[2]).toMatch(/HTTP 500; circuit open for 30000 ms after 3 consecutive failures/);

    osrm.reset(routeOf(1000)); // healthy again, but the client does not know yet
    advance(29_999);
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(osrm.requests).toBe(0);
    // A skipped call is counted, not reported: at thousands of quotes a second, a line each
    // would bury the outage's cause. The next report (the probe's) says how many.
    expect(reasons).toHaveLength(3);
    await client.roadDistanceKm(lagos, abuja);
    osrm.reset(fail500);
    advance(1);
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(reasons).toHaveLength(4);
    expect(reasons[3]).toMatch(
      /^HTTP 500; circuit open for 30000 ms after 4 consecutive failures; 2 calls skipped before$/,
    );
  });

  it('closes after the cool-down when the probe succeeds', async () => {
    osrm.reset(fail500);
    const { client, advance } = breakerClient();
    for (let i = 0; i < 3; i++) await client.roadDistanceKm(lagos, abuja);

    osrm.reset(routeOf(2000));
    advance(30_000);
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(2);
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(2);
    expect(osrm.requests).toBe(2);

    // Closed means counting from zero again: two failures do not reopen it.
    osrm.reset(fail500);
    await client.roadDistanceKm(lagos, abuja);
    await client.roadDistanceKm(lagos, abuja);
    osrm.reset(routeOf(3000));
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(3);
  });

  it('reopens for another cool-down at once when the probe fails', async () => {
    osrm.reset(fail500);
    const { client, reasons, advance } = breakerClient();
    for (let i = 0; i < 3; i++) await client.roadDistanceKm(lagos, abuja);

    advance(30_000);
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();
    expect(osrm.requests).toBe(4);
    expect(reasons[3]).toMatch(/circuit open for 30000 ms after 4 consecutive failures/);

    advance(10_000);
    await client.roadDistanceKm(lagos, abuja);
    expect(osrm.requests).toBe(4);
  });

  it('lets a single probe through while it is in flight', async () => {
    osrm.reset(fail500);
    const { client, advance } = breakerClient();
    for (let i = 0; i < 3; i++) await client.roadDistanceKm(lagos, abuja);

    osrm.reset(routeOf(4000));
    advance(30_000);
    const answers = await Promise.all([
      client.roadDistanceKm(lagos, abuja),
      client.roadDistanceKm(lagos, abuja),
      client.roadDistanceKm(lagos, abuja),
    ]);
    expect(answers).toEqual([4, null, null]);
    expect(osrm.requests).toBe(1);
  });

  it('does not count failures that a success interrupts', async () => {
    const { client } = breakerClient();
    for (let round = 0; round < 3; round++) {
      osrm.reset(fail500);
      await client.roadDistanceKm(lagos, abuja);
      await client.roadDistanceKm(lagos, abuja);
      osrm.reset(routeOf(1000));
      await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(1);
    }
  });

  it('does not open on NoRoute answers: the server is alive', async () => {
    osrm.reset((_req, res) => sendJson(res, 400, { code: 'NoRoute', message: 'Impossible route' }));
    const { client } = breakerClient();
    for (let i = 0; i < 5; i++)
      await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBeNull();

    osrm.reset(routeOf(1000));
    await expect(client.roadDistanceKm(lagos, abuja)).resolves.toBe(1);
  });

  it('opens on refused connections and timeouts too', async () => {
    let clock = 0;
    const { client, reasons } = clientWith({
      baseUrl: closedPortUrl,
      failureThreshold: 2,
      now: () => clock,
    });
    await client.roadDistanceKm(lagos, abuja);
    await client.roadDistanceKm(lagos, abuja);
    clock += 1;
    await client.roadDistanceKm(lagos, abuja);
    expect(reasons).toEqual([
      'request failed: ECONNREFUSED',
      `request failed: ECONNREFUSED; circuit open for ${DEFAULT_COOL_DOWN_MS} ms after 2 consecutive failures`,
    ]);
  });
});

describe('resolveRoadDistance', () => {
  const fixed = (km: number | null): RoadDistanceSource => ({
    roadDistanceKm: () => Promise.resolve(km),
  });

  it('takes the OSRM road distance when it is longer than the straight line', async () => {
    await expect(
      resolveRoadDistance(100, lagos, abuja, { osrm: fixed(140), circuity: 1.3 }),
    ).resolves.toEqual({
      distanceKm: 140,
      source: 'osrm',
    });
  });

  it('keeps the straight line when OSRM reports less (both ends snapped onto one road)', async () => {
    await expect(
      resolveRoadDistance(100, lagos, abuja, { osrm: fixed(95), circuity: 1.3 }),
    ).resolves.toEqual({
      distanceKm: 100,
      source: 'osrm',
    });
  });

  it('falls back to straight line times circuity when OSRM has no answer', async () => {
    const resolved = await resolveRoadDistance(100, lagos, abuja, {
      osrm: fixed(null),
      circuity: 1.3,
    });
    expect(resolved.source).toBe('estimate');
    expect(resolved.distanceKm).toBeCloseTo(130, 9);
  });

  it('estimates without OSRM configured', async () => {
    await expect(resolveRoadDistance(100, lagos, abuja, { circuity: 1.5 })).resolves.toEqual({
      distanceKm: 150,
      source: 'estimate',
    });
  });

  it('rejects a circuity below 1 even when OSRM answers', async () => {
    await expect(
      resolveRoadDistance(100, lagos, abuja, { osrm: fixed(140), circuity: 0.5 }),
    ).rejects.toThrow(RangeError);
  });

  it('asks the OSRM server and takes the max against the straight line', async () => {
    const { client } = clientWith();

    osrm.reset(routeOf(760_000));
    await expect(
      resolveRoadDistance(525, lagos, abuja, { osrm: client, circuity: 1.3 }),
    ).resolves.toEqual({
      distanceKm: 760,
      source: 'osrm',
    });

    osrm.reset(routeOf(500_000));
    await expect(
      resolveRoadDistance(525, lagos, abuja, { osrm: client, circuity: 1.3 }),
    ).resolves.toEqual({
      distanceKm: 525,
      source: 'osrm',
    });
    expect(osrm.received[0]).toMatchObject({ from: lagos, to: abuja });
  });

  it('falls back to the estimate when the OSRM server fails', async () => {
    const { client, reasons } = clientWith();
    osrm.reset((_req, res) => sendJson(res, 400, { code: 'NoRoute' }));

    const resolved = await resolveRoadDistance(525, lagos, abuja, { osrm: client, circuity: 1.3 });
    expect(resolved).toEqual({ distanceKm: expect.closeTo(682.5, 9), source: 'estimate' });
    expect(reasons).toEqual(['no route (NoRoute)']);
  });
});

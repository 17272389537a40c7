import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createNominatimGeocoder,
  type NominatimOptions,
} from '../../../services/geo/external-geocoder';

/** A stand-in Nominatim whose next answer each test sets. */
let server: Server;
let base: string;
let answer: (req: IncomingMessage) => {
  status?: number;
  body?: string;
  hang?: boolean;
  /** Answers by hand instead. */
  raw?: (res: ServerResponse) => void;
};
const seen: IncomingMessage[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    const { status = 200, body = '[]', hang, raw } = answer(req);
    if (raw) return raw(res);
    if (hang) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function geocoder(onFailure = jest.fn()) {
  return {
    onFailure,
    client: createNominatimGeocoder({
      baseUrl: `${base}/`,
      timeoutMs: 200,
      userAgent: 'Waybill/test',
      countryCodes: 'ng',
      onFailure,
    }),
  };
}

describe('Nominatim-compatible geocoder', () => {
  it('asks /search for one JSON place and returns its point', async () => {
    answer = () => ({ body: JSON.stringify([{ lat: '6.4281', lon: '3.4219', name: 'x' }]) });
    const { client, onFailure } = geocoder();
    await expect(client.geocode('12 Admiralty Way, Lekki')).resolves.toEqual({
      lat: 6.4281,
      lon: 3.4219,
    });
    const req = seen[seen.length - 1];
    const url = new URL(req.url ?? '', base);
    expect(url.pathname).toBe('/search');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      q: '12 admiralty way, lekki',
      format: 'jsonv2',
      limit: '1',
      addressdetails: '1',
      countrycodes: 'ng',
    });
    expect(req.headers['user-agent']).toBe('Waybill/test');
    expect(onFailure).not.toHaveBeenCalled();
  });

  it('returns the country and state the server puts the place in, when it names them', async () => {
    answer = () => ({
      body: JSON.stringify([
        { lat: '6.676', lon: '3.364', address: { state: 'Ogun State', country_code: 'ng' } },
      ]),
    });
    const { client } = geocoder();
    await expect(client.geocode('Akute, Ogun')).resolves.toEqual({
      lat: 6.676,
      lon: 3.364,
      state: 'Ogun State',
      countryCode: 'ng',
    });
  });

  it('ignores a country code that is not two letters', async () => {
    answer = () => ({
      body: JSON.stringify([{ lat: '6.676', lon: '3.364', address: { country_code: 'nga' } }]),
    });
    const { client } = geocoder();
    await expect(client.geocode('Akute')).resolves.toEqual({ lat: 6.676, lon: 3.364 });
  });

  it('takes a state or a country found for the text as no street place: null, without complaint', async () => {
    const { client, onFailure } = geocoder();
    for (const [rank, text] of [
      [8, 'Ogun State'],
      [4, 'Nigeria'],
    ] as const) {
      answer = () => ({ body: JSON.stringify([{ lat: '7.0', lon: '3.5', place_rank: rank }]) });
      await expect(client.geocode(text)).resolves.toBeNull();
    }
    // A town's or a street's point is taken.
    answer = () => ({ body: JSON.stringify([{ lat: '6.6', lon: '3.35', place_rank: 16 }]) });
    await expect(client.geocode('Ikeja')).resolves.toEqual({ lat: 6.6, lon: 3.35 });
    expect(onFailure).not.toHaveBeenCalled();
  });

  it('answers null without complaint when nothing matches', async () => {
    answer = () => ({ body: '[]' });
    const { client, onFailure } = geocoder();
    await expect(client.geocode('nowhere at all')).resolves.toBeNull();
    expect(onFailure).not.toHaveBeenCalled();
  });

  it.each([
    ['an HTTP error', { status: 503, body: 'busy' }, /HTTP 503: busy/],
    ['a body that is not JSON', { body: '<html>' }, /not JSON/],
    ['a body that is not a list', { body: '{"error":"x"}' }, /not a list/],
    ['a place without coordinates', { body: '[{"lat":"x","lon":"3"}]' }, /no valid lat\/lon/],
    // `Number` reads each of these as 0: a healthy answer of the Gulf of Guinea, cached an hour.
    ['a place whose lat is null', { body: '[{"lat":null,"lon":null}]' }, /no valid lat\/lon/],
    ['a place whose lat is empty', { body: '[{"lat":"","lon":" "}]' }, /no valid lat\/lon/],
    ['a place whose lat is a list', { body: '[{"lat":[],"lon":[]}]' }, /no valid lat\/lon/],
    ['no answer in time', { hang: true }, /timed out after 200 ms/],
  ])('reports %s and answers null', async (_case, reply, reason) => {
    answer = () => reply;
    const { client, onFailure } = geocoder();
    await expect(client.geocode('Ikeja')).resolves.toBeNull();
    expect(onFailure).toHaveBeenCalledWith(expect.stringMatching(reason));
  });

  it('reports a refused connection', async () => {
    const onFailure = jest.fn();
    const client = createNominatimGeocoder({
      baseUrl: 'http://127.0.0.1:1',
      timeoutMs: 500,
      userAgent: 'Waybill/test',
      onFailure,
    });
    await expect(client.geocode('Ikeja')).resolves.toBeNull();
    expect(onFailure).toHaveBeenCalledWith(expect.stringMatching(/request failed/));
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() =>
      createNominatimGeocoder({ baseUrl: 'ftp://x', timeoutMs: 100, userAgent: 'x' }),
    ).toThrow(/Geocoder base URL must be http or https/);
  });
});

const lekki = { lat: 6.4281, lon: 3.4219 };
const found = () => ({ body: JSON.stringify([{ lat: '6.4281', lon: '3.4219' }]) });

/** A client on a fake clock; `asked` counts the requests that reached the server. */
function clocked(overrides: Partial<NominatimOptions> = {}) {
  let clock = 1_000_000;
  const reasons: string[] = [];
  const before = seen.length;
  const client = createNominatimGeocoder({
    baseUrl: base,
    timeoutMs: 2000,
    userAgent: 'Waybill/test',
    now: () => clock,
    onFailure: (reason) => reasons.push(reason),
    ...overrides,
  });
  return {
    client,
    reasons,
    asked: () => seen.length - before,
    advance: (ms: number) => (clock += ms),
  };
}

describe('geocoder answer size', () => {
  it('reports an answer over maxAnswerBytes and answers null', async () => {
    const place = { lat: '6.4281', lon: '3.4219', display_name: 'x'.repeat(5000) };
    answer = () => ({ body: JSON.stringify([place]) });
    const { client, reasons } = clocked({ maxAnswerBytes: 4096 });
    await expect(client.geocode('Lekki')).resolves.toBeNull();
    expect(reasons).toEqual([expect.stringMatching(/over the 4096-byte limit/)]);
  });
});

describe('geocoder answers it does not take', () => {
  it('reports a Content-Length over maxAnswerBytes at once, not after the timeout', async () => {
    answer = () => ({
      raw: (res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '10000000' });
        res.write('['); // and nothing more
      },
    });
    const { client, reasons } = clocked({ maxAnswerBytes: 4096, timeoutMs: 200 });
    await expect(client.geocode('Lekki')).resolves.toBeNull();
    expect(reasons).toEqual([
      'HTTP 200: answer over the 4096-byte limit (Content-Length 10000000)',
    ]);
  });

  it('does not follow a redirect', async () => {
    answer = (req) =>
      req.url?.startsWith('/search')
        ? {
            raw: (res) =>
              res.writeHead(302, { location: `https://geo.example${req.url}&moved=1` }).end(),
          }
        : found();
    const { client, reasons } = clocked();
    await expect(client.geocode('12 Adeola Odeku Street, Lekki')).resolves.toBeNull();
    expect(seen[seen.length - 1].url).toMatch(/^\/search\?/);
    // Named by its server alone: the address geocoded, in its query, stays out of the logs.
    expect(reasons).toEqual(['HTTP 302: redirect not followed (to https://geo.example)']);
  });
});

describe('geocoder circuit breaker', () => {
  it('skips a geocoder that is down for the cool-down, then closes on a good probe', async () => {
    answer = () => ({ status: 503, body: 'down' });
    const { client, reasons, asked, advance } = clocked({
      failureThreshold: 2,
      coolDownMs: 10_000,
    });

    await expect(client.geocode('Ikeja one')).resolves.toBeNull();
    await expect(client.geocode('Ikeja two')).resolves.toBeNull();
    expect(reasons[1]).toBe(
      'HTTP 503: down; circuit open for 10000 ms after 2 consecutive failures',
    );
    answer = found; // back, but the client does not know yet
    advance(9_999);
    await expect(client.geocode('Ikeja three')).resolves.toBeNull();
    expect(asked()).toBe(2);
    // Skipped, not reported: the opening said why.
    expect(reasons).toHaveLength(2);

    advance(1);
    await expect(client.geocode('Ikeja four')).resolves.toEqual(lekki);
    await expect(client.geocode('Ikeja five')).resolves.toEqual(lekki);
    expect(asked()).toBe(4);
    expect(reasons).toHaveLength(2);
  });

  it('counts an answer of no place as a live server', async () => {
    const { client, asked } = clocked({ failureThreshold: 2 });
    answer = () => ({ status: 503 });
    await client.geocode('a');
    answer = () => ({ body: '[]' });
    await expect(client.geocode('b')).resolves.toBeNull();
    answer = () => ({ status: 503 });
    await client.geocode('c');
    answer = found;
    await expect(client.geocode('d')).resolves.toEqual(lekki);
    expect(asked()).toBe(4);
  });
});

describe('geocoder cache', () => {
  it('answers the same text again without asking the server, case and blanks aside', async () => {
    answer = found;
    const { client, asked } = clocked();
    await expect(client.geocode('12 Admiralty Way, Lekki')).resolves.toEqual(lekki);
    await expect(client.geocode('  12 admiralty  WAY, Lekki ')).resolves.toEqual(lekki);
    expect(asked()).toBe(1);
  });

  it('remembers that a text found nothing', async () => {
    answer = () => ({ body: '[]' });
    const { client, asked } = clocked();
    await expect(client.geocode('nowhere')).resolves.toBeNull();
    answer = found;
    await expect(client.geocode('nowhere')).resolves.toBeNull();
    expect(asked()).toBe(1);
  });

  it('asks once for the same text asked at the same time', async () => {
    answer = found;
    const { client, asked } = clocked();
    const answers = await Promise.all([client.geocode('Yaba'), client.geocode('yaba')]);
    expect(answers).toEqual([lekki, lekki]);
    expect(asked()).toBe(1);
  });

  it('keeps no failure: the next call asks again', async () => {
    answer = () => ({ status: 500 });
    const { client, asked } = clocked();
    await expect(client.geocode('Ikeja')).resolves.toBeNull();
    answer = found;
    await expect(client.geocode('Ikeja')).resolves.toEqual(lekki);
    expect(asked()).toBe(2);
  });

  it('asks again once cacheMs has passed', async () => {
    answer = found;
    const { client, asked, advance } = clocked({ cacheMs: 60_000 });
    await client.geocode('Ikeja');
    advance(59_999);
    await client.geocode('Ikeja');
    expect(asked()).toBe(1);
    advance(1);
    await client.geocode('Ikeja');
    expect(asked()).toBe(2);
  });

  it('holds at most cacheEntries places, the oldest dropped first', async () => {
    answer = found;
    const { client, asked } = clocked({ cacheEntries: 2 });
    for (const text of ['a', 'b', 'c']) await client.geocode(text);
    await client.geocode('c');
    await client.geocode('b');
    expect(asked()).toBe(3);
    await client.geocode('a');
    expect(asked()).toBe(4);
  });

  it('asks every time with cacheMs 0', async () => {
    answer = found;
    const { client, asked } = clocked({ cacheMs: 0 });
    await client.geocode('Ikeja');
    await client.geocode('Ikeja');
    expect(asked()).toBe(2);
  });
});

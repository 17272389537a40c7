import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNominatimGeocoder } from '../../../services/geo/external-geocoder';

/** A stand-in Nominatim whose next answer each test sets. */
let server: Server;
let base: string;
let answer: (req: IncomingMessage) => { status?: number; body?: string; hang?: boolean };
const seen: IncomingMessage[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push(req);
    const { status = 200, body = '[]', hang } = answer(req);
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
      q: '12 Admiralty Way, Lekki',
      format: 'jsonv2',
      limit: '1',
      countrycodes: 'ng',
    });
    expect(req.headers['user-agent']).toBe('Waybill/test');
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

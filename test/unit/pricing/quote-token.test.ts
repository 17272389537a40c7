import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import type { Trip } from '../../../libs/contracts/geo';
import { QUOTE_ID } from '../../../libs/contracts/pricing';
import {
  QUOTE_CLOCK_SLACK_MS,
  heldRoute,
  readQuote,
  signQuote,
  type QuoteClaims,
} from '../../../services/pricing/quote-token';

const SECRET = 'a-quote-key-of-32-characters-abc';
const NOW = Date.parse('2026-12-05T10:00:00Z');
const USER = '3f1e2d4c-5b6a-4798-8a7b-6c5d4e3f2a1b';
const FLEET = '7a2e3d4c-5b6f-4a7e-9d8c-0b1f2e3d4c5b';
/** How long quotes are held: the longest claimsArb signs. */
const TTL_MS = 86_400_000;

const claims: QuoteClaims = {
  userId: USER,
  expiresAt: NOW + 900_000,
  fleetTypeId: FLEET,
  origin: { lat: 6.6018, lon: 3.3515 },
  destination: { lat: 6.4474, lon: 3.4723 },
  distance: { distanceKm: 60, etaSeconds: 7200 },
  totalKobo: 1_428_000,
};

const claimsArb: fc.Arbitrary<QuoteClaims> = fc.record({
  userId: fc.uuid(),
  expiresAt: fc.integer({ min: NOW + 1, max: NOW + 86_400_000 }),
  fleetTypeId: fc.uuid(),
  origin: fc.record({
    lat: fc.double({ min: -90, max: 90, noNaN: true }),
    lon: fc.double({ min: -180, max: 180, noNaN: true }),
  }),
  destination: fc.record({
    lat: fc.double({ min: -90, max: 90, noNaN: true }),
    lon: fc.double({ min: -180, max: 180, noNaN: true }),
  }),
  distance: fc.record({
    distanceKm: fc.double({ min: 0, max: 40_000, noNaN: true }),
    etaSeconds: fc.nat(),
  }),
  totalKobo: fc.nat({ max: Number.MAX_SAFE_INTEGER }),
});

describe('quote ids', () => {
  it('read back exactly what was signed, for its account, and fit the documented form', () => {
    fc.assert(
      fc.property(claimsArb, (signed) => {
        const id = signQuote(SECRET, signed);
        expect(id).toMatch(QUOTE_ID.pattern);
        expect(id.length).toBeLessThanOrEqual(QUOTE_ID.maxLength);
        // -0 reads back as 0 through JSON; the points are compared with ===, which agrees.
        const reading = readQuote(SECRET, id, { userId: signed.userId, now: NOW, ttlMs: TTL_MS });
        expect(reading.ok && JSON.stringify(reading.claims)).toBe(JSON.stringify(signed));
      }),
    );
  });

  it('refuse any change of any character, even where base64url leaves bits unused', () => {
    const id = signQuote(SECRET, claims);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.';
    fc.assert(
      fc.property(fc.nat({ max: id.length - 1 }), fc.constantFrom(...alphabet), (at, character) => {
        fc.pre(id[at] !== character);
        const altered = id.slice(0, at) + character + id.slice(at + 1);
        const reading = readQuote(SECRET, altered, { userId: USER, now: NOW, ttlMs: TTL_MS });
        expect(reading).toEqual({ ok: false, reason: 'unsigned' });
      }),
      { numRuns: 500 },
    );
  });

  it('are not ours under another key, nor with a body we did not write', () => {
    const id = signQuote(SECRET, claims);
    expect(readQuote(`${SECRET}-rotated`, id, { userId: USER, now: NOW, ttlMs: TTL_MS })).toEqual({
      ok: false,
      reason: 'unsigned',
    });
    // Signed with our key, but not the shape signQuote writes.
    for (const json of [
      '{"u":1}',
      '[1,2,3]',
      'not json',
      JSON.stringify(['a', 1, 'f', [1], [1, 2], [1, 2], 3]),
    ]) {
      const signed = `q1.${Buffer.from(json).toString('base64url')}`;
      const digest = createHmac('sha256', SECRET).update(signed).digest('base64url');
      expect(
        readQuote(SECRET, `${signed}.${digest}`, { userId: USER, now: NOW, ttlMs: TTL_MS }),
      ).toEqual({
        ok: false,
        reason: 'unsigned',
      });
    }
    expect(readQuote(SECRET, 'q1.abc', { userId: USER, now: NOW, ttlMs: TTL_MS }).ok).toBe(false);
  });

  it('hold nothing for another account, nor from the instant they expire', () => {
    const id = signQuote(SECRET, claims);
    expect(readQuote(SECRET, id, { userId: FLEET, now: NOW, ttlMs: TTL_MS })).toEqual({
      ok: false,
      reason: 'foreign',
    });
    expect(
      readQuote(SECRET, id, { userId: USER, now: claims.expiresAt - 1, ttlMs: TTL_MS }).ok,
    ).toBe(true);
    expect(readQuote(SECRET, id, { userId: USER, now: claims.expiresAt, ttlMs: TTL_MS })).toEqual({
      ok: false,
      reason: 'expired',
      expiresAt: claims.expiresAt,
    });
  });

  it('hold nothing when they expire further ahead than quotes are held now, a clock’s slack aside', () => {
    const id = signQuote(SECRET, claims);
    const ttlMs = 60_000;
    const latest = claims.expiresAt - ttlMs - QUOTE_CLOCK_SLACK_MS;
    expect(readQuote(SECRET, id, { userId: USER, now: latest, ttlMs }).ok).toBe(true);
    expect(readQuote(SECRET, id, { userId: USER, now: latest - 1, ttlMs })).toEqual({
      ok: false,
      reason: 'outlived',
      expiresAt: claims.expiresAt,
    });
  });
});

describe('the route a quoted request is priced on', () => {
  const route = (origin = claims.origin, destination = claims.destination, roadMeasured = true) =>
    ({
      origin: { ...origin, address: 'Ikeja' },
      destination: { ...destination, address: 'Lekki' },
      distance: { distanceKm: 27.3, etaSeconds: 3276 },
      routeType: 'INTRA_CITY',
      roadMeasured,
    }) as unknown as Trip; // only the fields heldRoute reads

  it('has the quote’s distance and ETA when both ends and the fleet type are the quote’s', () => {
    const held = heldRoute(route(), FLEET, claims);
    expect(held.distance).toEqual(claims.distance);
    expect(held.origin).toEqual(route().origin);
    expect(held).not.toHaveProperty('roadMeasured');
  });

  it('keeps its own when it is the longer: a quote never lowers the distance measured now', () => {
    const shorter = { ...claims, distance: { distanceKm: 22, etaSeconds: 2640 } };
    expect(heldRoute(route(), FLEET, shorter).distance).toEqual(route().distance);
  });

  it('has the quote’s when the road is not measured now, even a shorter one: an estimate does not reprice', () => {
    const shorter = { ...claims, distance: { distanceKm: 22, etaSeconds: 2640 } };
    const estimated = route(claims.origin, claims.destination, false);
    expect(heldRoute(estimated, FLEET, shorter).distance).toEqual(shorter.distance);
    expect(heldRoute(estimated, FLEET, claims).distance).toEqual(claims.distance);
  });

  it('keeps its own when it is the longer and whether the road was measured is not known (a geo of the version before)', () => {
    const shorter = { ...claims, distance: { distanceKm: 22, etaSeconds: 2640 } };
    const unknown = { ...route(), roadMeasured: undefined };
    expect(heldRoute(unknown, FLEET, shorter).distance).toEqual(route().distance);
    expect(heldRoute(unknown, FLEET, claims).distance).toEqual(claims.distance);
  });

  it('keeps its own when the quote’s distance is shorter than the straight line, which geo never answers', () => {
    const estimated = route(claims.origin, claims.destination, false);
    // 21.7453 km between the two points as the crow flies, which geo answers as 21.745.
    for (const distanceKm of [0, 21.74]) {
      const impossible = { ...claims, distance: { distanceKm, etaSeconds: 0 } };
      expect(heldRoute(estimated, FLEET, impossible).distance).toEqual(estimated.distance);
    }
    const rounded = { ...claims, distance: { distanceKm: 21.745, etaSeconds: 2609 } };
    expect(heldRoute(estimated, FLEET, rounded).distance).toEqual(rounded.distance);
  });

  it('keeps its own for another fleet type or another point at either end', () => {
    const moved = { ...claims.origin, lat: claims.origin.lat + 1e-9 };
    for (const measured of [true, false]) {
      for (const [r, fleet] of [
        [route(claims.origin, claims.destination, measured), USER],
        [route(moved, claims.destination, measured), FLEET],
        [route(claims.origin, moved, measured), FLEET],
      ] as const) {
        expect(heldRoute(r, fleet, claims).distance).toEqual(r.distance);
      }
    }
  });
});

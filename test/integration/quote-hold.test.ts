import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../libs/config';
import { readQuote, signQuote } from '../../services/pricing/quote-token';
import {
  balanceOf,
  credit,
  DESTINATION,
  entriesOf,
  freePackages,
  ORIGIN,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { request } from '../support/http';
import { useMerchantStack } from '../support/merchant-stack';

/**
 * A request that names its Mode A quote (decision 142) is charged the quoted total or refused:
 * here the routing server answers the quote and is down for the request, which without the
 * quote would be priced on the straight-line estimate instead of the road.
 */
let osrm: Server;
let osrmUp = true;
/** The road from Ikeja to Lekki by the stand-in OSRM: far longer than the estimate. */
const ROAD_METRES = 60_000;
let roadMetres = ROAD_METRES;

beforeAll(async () => {
  osrm = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    if (!osrmUp) {
      res.statusCode = 503;
      res.end('{"message":"down for the test"}');
      return;
    }
    res.end(JSON.stringify({ code: 'Ok', routes: [{ distance: roadMetres, duration: 3600 }] }));
  });
  await new Promise<void>((resolve) => osrm.listen(0, '127.0.0.1', resolve));
  stackEnv.OSRM_URL = `http://127.0.0.1:${(osrm.address() as AddressInfo).port}`;
  // Each test says when routing is down: the breaker must not keep it down for the next.
  stackEnv.OSRM_FAILURE_THRESHOLD = '1000';
});

afterAll(async () => {
  await new Promise((resolve) => osrm?.close(resolve));
});

/** Filled in before the stack starts (its `beforeAll` runs after the one above). */
const stackEnv: Record<string, string> = {};
const stack = useMerchantStack({ internal: [], env: stackEnv });

const alice = () => stack.alice;
const url = () => stack.node.url;

/** Mode A of these packages between the requests' ends, as alice. */
async function quoteOf(packagesId: string[]) {
  const reply = await request(url(), 'POST', '/api/pricing', {
    headers: { 'api-key': alice().key },
    json: { origin: ORIGIN, destination: DESTINATION, packagesId },
  });
  expect(reply.status).toBe(200);
  const data = reply.body.data as {
    deliveryCost: { quoteId: string; quoteExpiresAt: string; distance: { distanceKm: number } };
    deliveryFee: { creator: { amount: string } };
  };
  return { ...data, quoteId: data.deliveryCost.quoteId };
}

describe('a request naming its quote', () => {
  beforeAll(async () => {
    await credit(url(), alice(), 500_000);
  });

  beforeEach(() => {
    osrmUp = true;
    roadMetres = ROAD_METRES;
  });

  it('is charged the quoted total on the quoted road, though routing fails at the request', async () => {
    const [quotedPackage, plainPackage] = [
      await savePackage(url(), alice()),
      await savePackage(url(), alice()),
    ];
    const quote = await quoteOf([quotedPackage]);
    expect(quote.deliveryCost.distance.distanceKm).toBe(ROAD_METRES / 1000);
    expect(quote.quoteId).toMatch(/^q1\./);

    osrmUp = false;
    const before = Number(await balanceOf(url(), alice()));
    const held = await requestDelivery(url(), alice(), [quotedPackage], {
      quoteId: quote.quoteId,
    });
    expect(held.status).toBe(201);
    expect(held.body.data.deliveryFee.creator.amount).toBe(quote.deliveryFee.creator.amount);
    const debits = (await entriesOf(url(), alice())).filter(
      (e) => e.reference === held.body.data.deliveryId,
    );
    expect(debits.map((e) => e.amount)).toEqual([`-${quote.deliveryFee.creator.amount}`]);

    // Without the quote, the same load is priced on the estimate: the drift the quote holds off.
    const plain = await requestDelivery(url(), alice(), [plainPackage]);
    expect(plain.status).toBe(201);
    const plainAmount = plain.body.data.deliveryFee.creator.amount;
    expect(Number(plainAmount)).toBeLessThan(Number(quote.deliveryFee.creator.amount));
    expect(Number(await balanceOf(url(), alice()))).toBeCloseTo(
      before - Number(quote.deliveryFee.creator.amount) - Number(plainAmount),
      2,
    );
  });

  it('is charged the quoted total on a measured road shorter than the estimate routing falls back to', async () => {
    const [own, plainPackage] = [
      await savePackage(url(), alice()),
      await savePackage(url(), alice()),
    ];
    osrmUp = false;
    const estimated = await quoteOf([own]);
    // Between the straight line (the estimate over its circuity of 1.3) and the estimate.
    roadMetres = Math.round(estimated.deliveryCost.distance.distanceKm * 0.9) * 1000;
    osrmUp = true;
    const quote = await quoteOf([own]);
    expect(quote.deliveryCost.distance.distanceKm).toBe(roadMetres / 1000);
    expect(Number(quote.deliveryFee.creator.amount)).toBeLessThan(
      Number(estimated.deliveryFee.creator.amount),
    );

    osrmUp = false;
    const held = await requestDelivery(url(), alice(), [own], { quoteId: quote.quoteId });
    expect(held.status).toBe(201);
    expect(held.body.data.deliveryFee.creator.amount).toBe(quote.deliveryFee.creator.amount);
    // Without a quote, the request is priced on the estimate, as a quote made now would be.
    const plain = await requestDelivery(url(), alice(), [plainPackage]);
    expect(plain.status).toBe(201);
    expect(plain.body.data.deliveryFee.creator.amount).toBe(estimated.deliveryFee.creator.amount);
  });

  it('is never priced below the road measured now: a quote made on the estimate is refused (409)', async () => {
    const own = await savePackage(url(), alice());
    osrmUp = false;
    const estimated = await quoteOf([own]);
    expect(estimated.deliveryCost.distance.distanceKm).toBeLessThan(ROAD_METRES / 1000);
    osrmUp = true;
    const before = await balanceOf(url(), alice());
    const reply = await requestDelivery(url(), alice(), [own], { quoteId: estimated.quoteId });
    expect(reply.status).toBe(409);
    expect(reply.body.message).toMatch(/^This delivery now costs [0-9.]+ NGN, not the /);
    expect(await balanceOf(url(), alice())).toBe(before);
    // Priced again with the road known, it goes through at the new quote.
    const road = await quoteOf([own]);
    const retried = await requestDelivery(url(), alice(), [own], { quoteId: road.quoteId });
    expect(retried.status).toBe(201);
    expect(retried.body.data.deliveryFee.creator.amount).toBe(road.deliveryFee.creator.amount);
  });

  it('is refused (409), not charged, when its packages now cost another total', async () => {
    const light = await savePackage(url(), alice());
    const heavy = await savePackage(url(), alice(), { size: 'LARGE', quantity: 4 });
    const quote = await quoteOf([light]);
    const before = await balanceOf(url(), alice());

    const reply = await requestDelivery(url(), alice(), [heavy], { quoteId: quote.quoteId });
    expect(reply.status).toBe(409);
    expect(reply.body.message).toMatch(
      new RegExp(
        `^This delivery now costs [0-9.]+ NGN, not the ${quote.deliveryFee.creator.amount.replace('.', '\\.')} NGN of its quote .*price it again with POST /api/pricing`,
      ),
    );
    expect(await balanceOf(url(), alice())).toBe(before);
    expect(await freePackages(url(), alice())).toEqual(expect.arrayContaining([light, heavy]));
  });

  it('is refused (400 naming quoteId) for another account’s quote or an altered one', async () => {
    const own = await savePackage(url(), alice());
    const { quoteId } = await quoteOf([own]);
    const bobs = await savePackage(url(), stack.bob);
    await credit(url(), stack.bob, 100_000);

    const foreign = await requestDelivery(url(), stack.bob, [bobs], { quoteId });
    expect(foreign.status).toBe(400);
    expect(foreign.body.errors).toEqual([
      { field: 'quoteId', message: 'quoteId is a quote of another account' },
    ]);
    expect(await balanceOf(url(), stack.bob)).toBe('100000.00');
    expect(await freePackages(url(), stack.bob)).toContain(bobs);

    // The body altered by one character (its digest kept): not a quote we signed.
    const dot = quoteId.indexOf('.') + 2;
    const altered = `${quoteId.slice(0, dot)}${quoteId[dot] === 'A' ? 'B' : 'A'}${quoteId.slice(dot + 1)}`;
    const forged = await requestDelivery(url(), alice(), [own], { quoteId: altered });
    expect(forged.status).toBe(400);
    expect(forged.body.errors).toEqual([
      expect.objectContaining({
        field: 'quoteId',
        message: expect.stringMatching(/^quoteId is not a quote of this service/),
      }),
    ]);

    const malformed = await requestDelivery(url(), alice(), [own], { quoteId: 'q1.nope' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors).toEqual([
      expect.objectContaining({
        field: 'quoteId',
        message: expect.stringMatching(/must be the quoteId of a Mode A answer/),
      }),
    ]);
    expect(await freePackages(url(), alice())).toContain(own);
  });

  it('is refused (409) once the quote has expired, naming when', async () => {
    const own = await savePackage(url(), alice());
    const quote = await quoteOf([own]);
    // The same claims, signed as pricing signs them (staging's key), but a second old.
    const secret = loadConfig({}).quotes.secret;
    const reading = readQuote(secret, quote.quoteId, {
      userId: alice().userId,
      now: Date.now(),
      ttlMs: loadConfig({}).quotes.ttlMs,
    });
    if (!reading.ok) throw new Error(`the quote did not read: ${reading.reason}`);
    const expiresAt = Date.now() - 1000;
    const expired = signQuote(secret, { ...reading.claims, expiresAt });
    const before = await balanceOf(url(), alice());
    const reply = await requestDelivery(url(), alice(), [own], { quoteId: expired });
    expect(reply.status).toBe(409);
    expect(reply.body.message).toBe(
      `The quote expired at ${new Date(expiresAt).toISOString()}: price it again with POST /api/pricing and send the quoteId it answers (under a new Idempotency-Key if you sent one)`,
    );
    expect(await balanceOf(url(), alice())).toBe(before);
    expect(await freePackages(url(), alice())).toContain(own);
  });

  it('is refused (409) when it expires further ahead than quotes are held now', async () => {
    const own = await savePackage(url(), alice());
    const quote = await quoteOf([own]);
    const { secret, ttlMs } = loadConfig({}).quotes;
    const reading = readQuote(secret, quote.quoteId, {
      userId: alice().userId,
      now: Date.now(),
      ttlMs,
    });
    if (!reading.ok) throw new Error(`the quote did not read: ${reading.reason}`);
    // Signed as pricing signs them, held a day (a key that leaked, or a lifetime since cut).
    const outlived = signQuote(secret, { ...reading.claims, expiresAt: Date.now() + 86_400_000 });
    const before = await balanceOf(url(), alice());
    const reply = await requestDelivery(url(), alice(), [own], { quoteId: outlived });
    expect(reply.status).toBe(409);
    expect(reply.body.message).toBe(
      `The quote is held for longer than this service now holds quotes (${ttlMs / 1000} s): price it again with POST /api/pricing and send the quoteId it answers (under a new Idempotency-Key if you sent one)`,
    );
    expect(await balanceOf(url(), alice())).toBe(before);
    expect(await freePackages(url(), alice())).toContain(own);
  });

  it('gives Mode B no quoteId: a request always takes saved packages', async () => {
    const reply = await request(url(), 'POST', '/api/pricing', {
      headers: { 'api-key': alice().key },
      json: { origin: ORIGIN, destination: DESTINATION, totalWeight: 2, totalValue: 100 },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.data.quoteId).toBeUndefined();
    expect(Object.keys(reply.body.data)).not.toContain('quoteExpiresAt');
  });
});

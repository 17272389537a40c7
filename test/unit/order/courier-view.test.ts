import type { Caller } from '../../../libs/contracts';
import { onAreaGrid } from '../../../libs/geodesy';
import { courierViewer, sharedReads } from '../../../services/order/courier-view';
import type { DeliveryRecord, StoredAddress } from '../../../services/order/delivery-record';
import type { DeliveryStatus } from '../../../services/order/lifecycle';

const YABA = { lat: 6.5095, lon: 3.3711 };

/** COURIER_ONLINE_MS of these views. */
const ONLINE_MS = 120_000;
const courierOnDelivery = courierViewer(ONLINE_MS);
const NOW = new Date('2026-12-05T10:00:00.000Z');

/**
 * A caller answering as courier-matching and geo would, recording what it was asked; the
 * courier last reported `reportedMsAgo` before NOW.
 */
function services(reportedMsAgo = 5_000): Caller & { asked: string[]; placed: unknown[] } {
  const asked: string[] = [];
  const placed: unknown[] = [];
  const answers: Record<string, unknown> = {
    'courier-matching.getCourier': {
      name: 'Tunde Bakare',
      phone: '+2348000000001',
      profilePhoto: null,
      lastLocation: { ...YABA, at: new Date(NOW.getTime() - reportedMsAgo).toISOString() },
      fleet: { regNo: 'LAG-123', make: 'Bajaj', model: 'Boxer', colour: 'Red', typeId: 'f' },
    },
    'geo.resolveAddress': { country: 'Nigeria', state: 'Lagos', lgaOrCity: 'Yaba' },
    'geo.getFleetType': { averageSpeedKmh: 30 },
  };
  return {
    asked,
    placed,
    call: (name, params) => {
      asked.push(name);
      if (name === 'geo.resolveAddress') placed.push((params as { address: unknown }).address);
      return Promise.resolve(answers[name]);
    },
  };
}

const stop = (lat: number, lon: number) => ({ fields: { lat, lon } }) as unknown as StoredAddress;

function deliveryIn(status: DeliveryStatus): DeliveryRecord {
  return {
    _id: 'd',
    lifecycle: { status },
    assignment: { courierId: 'c' },
    distanceKm: 21.4,
    originId: 'o',
    destinationId: 'x',
  } as unknown as DeliveryRecord;
}

const addresses = new Map([
  ['o', stop(6.6018, 3.3515)],
  ['x', stop(6.4474, 3.4723)],
]);

describe('courierOnDelivery', () => {
  it('places the courier while they carry the delivery out, going back to the sender too', async () => {
    for (const status of ['IN_TRANSIT', 'RETURNING'] as const) {
      const caller = services();
      const view = await courierOnDelivery(caller, deliveryIn(status), addresses, { now: NOW });
      expect(view?.currentLocation).toEqual({
        country: 'Nigeria',
        state: 'Lagos',
        lgaOrCity: 'Yaba',
        ...YABA,
      });
      expect(caller.asked).toContain('geo.resolveAddress');
    }
  });

  it('places a reader shown no more than the cell (the tracking page) by the cell’s middle, its place too', async () => {
    const page = services();
    const view = await courierOnDelivery(page, deliveryIn('COURIER_ASSIGNED'), addresses, {
      now: NOW,
      etaFromArea: true,
    });
    const cell = onAreaGrid(YABA);
    expect(cell).not.toEqual(YABA);
    expect(page.placed).toEqual([cell]);
    expect(view?.currentLocation).toMatchObject(cell);
    const creator = services();
    await courierOnDelivery(creator, deliveryIn('COURIER_ASSIGNED'), addresses, { now: NOW });
    expect(creator.placed).toEqual([YABA]);
  });

  it('asks geo nothing for a reader not shown where the courier is', async () => {
    const caller = services();
    const view = await courierOnDelivery(caller, deliveryIn('RETURNING'), addresses, {
      located: false,
    });
    expect(view).toMatchObject({ name: 'Tunde Bakare', currentLocation: null, eta: null });
    expect(caller.asked).toEqual(['courier-matching.getCourier']);
  });

  it('never places a courier who is not carrying the delivery out, whatever is asked', async () => {
    const caller = services();
    const view = await courierOnDelivery(caller, deliveryIn('DELIVERED'), addresses, {
      located: true,
    });
    expect(view?.currentLocation).toBeNull();
    expect(caller.asked).toEqual(['courier-matching.getCourier']);
  });

  it('places the courier for a reader told no time (the tracking page) only from a position no older than asked', async () => {
    const placedWithinMs = 600_000;
    for (const [reportedMsAgo, placed] of [
      [placedWithinMs, true],
      [placedWithinMs + 1, false],
    ] as const) {
      const caller = services(reportedMsAgo);
      const view = await courierOnDelivery(caller, deliveryIn('IN_TRANSIT'), addresses, {
        now: NOW,
        etaFromArea: true,
        placedWithinMs,
      });
      expect({ reportedMsAgo, placed: view?.currentLocation !== null }).toEqual({
        reportedMsAgo,
        placed,
      });
      expect({ reportedMsAgo, asked: caller.asked.includes('geo.resolveAddress') }).toEqual({
        reportedMsAgo,
        asked: placed,
      });
      // The rest of the card stands.
      expect(view?.name).toBe('Tunde Bakare');
    }
    // Any age for a reader not limited so (the merchant's API says where they were last).
    const merchant = await courierOnDelivery(
      services(3_600_000),
      deliveryIn('IN_TRANSIT'),
      addresses,
      {
        now: NOW,
      },
    );
    expect(merchant?.currentLocation).not.toBeNull();
  });

  it('reckons an arrival window only from a position reported within COURIER_ONLINE_MS', async () => {
    const fresh = await courierOnDelivery(
      services(ONLINE_MS - 1000),
      deliveryIn('IN_TRANSIT'),
      addresses,
      {
        now: NOW,
      },
    );
    expect(fresh?.eta).toEqual({ from: expect.any(String), to: expect.any(String) });
    // A phone gone quiet for three hours: where it was last is shown, no window promised.
    const quiet = await courierOnDelivery(
      services(3 * 3600_000),
      deliveryIn('IN_TRANSIT'),
      addresses,
      {
        now: NOW,
      },
    );
    expect(quiet?.currentLocation).toMatchObject(YABA);
    expect(quiet?.eta).toBeNull();
  });

  it('reckons the window from the courier’s 0.01° cell before the collection, and for the tracking page always', async () => {
    const windowOf = async (
      status: DeliveryStatus,
      at: { lat: number; lon: number },
      area = false,
    ) => {
      const caller = services();
      const answers = caller.call;
      // The courier reported at `at`.
      caller.call = (name, params) =>
        answers(name, params).then((answer) =>
          name === 'courier-matching.getCourier'
            ? { ...(answer as object), lastLocation: { ...at, at: NOW.toISOString() } }
            : answer,
        );
      const view = await courierOnDelivery(caller, deliveryIn(status), addresses, {
        now: NOW,
        etaFromArea: area,
      });
      return view?.eta;
    };
    // Two points of one cell: the same window before the collection, whoever reads it; after
    // it, told apart, but not on the page.
    const a = { lat: 6.5095, lon: 3.3711 };
    const b = { lat: 6.5131, lon: 3.3747 };
    for (const status of ['COURIER_ASSIGNED', 'ARRIVED_AT_PICKUP'] as const) {
      expect(await windowOf(status, a)).toEqual(await windowOf(status, b));
    }
    expect(await windowOf('IN_TRANSIT', a)).not.toEqual(await windowOf('IN_TRANSIT', b));
    expect(await windowOf('IN_TRANSIT', a, true)).toEqual(await windowOf('IN_TRANSIT', b, true));
  });
});

describe('sharedReads', () => {
  it('asks once per page for a courier and a fleet type many deliveries share, every position each time', async () => {
    const caller = services();
    const page = sharedReads(caller);
    const views = await Promise.all(
      Array.from({ length: 5 }, () =>
        courierOnDelivery(page, deliveryIn('IN_TRANSIT'), addresses, { now: NOW }),
      ),
    );
    expect(views.every((v) => v?.currentLocation?.lgaOrCity === 'Yaba')).toBe(true);
    const count = (name: string) => caller.asked.filter((a) => a === name).length;
    expect(count('courier-matching.getCourier')).toBe(1);
    expect(count('geo.getFleetType')).toBe(1);
    expect(count('geo.resolveAddress')).toBe(5);
    // Another page asks again.
    await courierOnDelivery(sharedReads(caller), deliveryIn('IN_TRANSIT'), addresses, { now: NOW });
    expect(count('courier-matching.getCourier')).toBe(2);
  });
});

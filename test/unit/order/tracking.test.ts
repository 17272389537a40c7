import { createHash } from 'node:crypto';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { haversineKm } from '../../../libs/geodesy';
import type { CourierOnDelivery } from '../../../services/order/courier-view';
import type { DeliveryRecord, StoredAddress } from '../../../services/order/delivery-record';
import { firstName, placeName, toTrackingView } from '../../../services/order/tracking';
import { deliveries, NOW } from '../../support/built-deliveries';
import {
  MAP_HEIGHT,
  MAP_PADDING,
  MAP_WIDTH,
  projectMap,
} from '../../../services/order/tracking-map';
import {
  TRACKING_PAGE_CSP,
  trackingPage,
  trackingState,
} from '../../../services/order/tracking-page';

const IKEJA = { lat: 6.6018, lon: 3.3515 };
const LEKKI = { lat: 6.4474, lon: 3.4723 };
const YABA = { lat: 6.5095, lon: 3.3711 };

const point = fc.record({
  lat: fc.double({ min: -60, max: 60, noNaN: true }),
  lon: fc.double({ min: -170, max: 170, noNaN: true }),
});

describe('projectMap', () => {
  it('keeps every point inside the drawing, clear of its edges', () => {
    fc.assert(
      fc.property(point, point, fc.option(point, { nil: null }), (a, b, c) => {
        const map = projectMap(a, b, c);
        for (const p of [map.pickup, map.dropoff, ...(map.courier ? [map.courier] : [])]) {
          expect(p.x).toBeGreaterThanOrEqual(MAP_PADDING - 0.1);
          expect(p.x).toBeLessThanOrEqual(MAP_WIDTH - MAP_PADDING + 0.1);
          expect(p.y).toBeGreaterThanOrEqual(MAP_PADDING - 0.1);
          expect(p.y).toBeLessThanOrEqual(MAP_HEIGHT - MAP_PADDING + 0.1);
        }
      }),
    );
  });

  it('draws points closer than any scale can tell apart in the middle, not at NaN', () => {
    // fast-check's counterexample: a span of 5e-324 made the scale Infinity.
    const map = projectMap({ lat: 0, lon: 0 }, { lat: -5e-324, lon: 5e-324 }, null);
    expect(map.pickup).toEqual({ x: MAP_WIDTH / 2, y: MAP_HEIGHT / 2 });
    expect(map.dropoff).toEqual(map.pickup);
  });

  it('puts north up and east right, and fills the box along one axis', () => {
    const map = projectMap(IKEJA, LEKKI, YABA);
    // Lekki is south-east of Ikeja.
    expect(map.dropoff.x).toBeGreaterThan(map.pickup.x);
    expect(map.dropoff.y).toBeGreaterThan(map.pickup.y);
    const xs = [map.pickup.x, map.dropoff.x, (map.courier as { x: number }).x];
    const ys = [map.pickup.y, map.dropoff.y, (map.courier as { y: number }).y];
    const spanX = Math.max(...xs) - Math.min(...xs);
    const spanY = Math.max(...ys) - Math.min(...ys);
    expect(
      Math.abs(spanX - (MAP_WIDTH - 2 * MAP_PADDING)) < 0.2 ||
        Math.abs(spanY - (MAP_HEIGHT - 2 * MAP_PADDING)) < 0.2,
    ).toBe(true);
  });

  it('keeps the shape: one scale for both axes (longitude shrunk by the latitude)', () => {
    const map = projectMap({ lat: 0, lon: 0 }, { lat: 0.01, lon: 0.01 }, null);
    // At the equator a degree is as long both ways: a 45° line stays one.
    expect(Math.abs(map.dropoff.x - map.pickup.x)).toBeCloseTo(
      Math.abs(map.dropoff.y - map.pickup.y),
      0,
    );
  });

  it('puts points that coincide at the centre', () => {
    const map = projectMap(IKEJA, IKEJA, IKEJA);
    expect(map.pickup).toEqual({ x: MAP_WIDTH / 2, y: MAP_HEIGHT / 2 });
    expect(map.courier).toEqual(map.pickup);
  });
});

describe('firstName and placeName', () => {
  it('keep the first word of a name, and a city with its state', () => {
    expect(firstName('  Ada   Obi ')).toBe('Ada');
    expect(firstName('')).toBeNull();
    expect(firstName(undefined)).toBeNull();
    // A name stored before names were plain text: its controls shown, never sent raw.
    expect(firstName('Ada\u001b[2J Obi')).toBe('Ada␛[2J');
    expect(placeName({ lgaOrCity: 'Ikeja', state: 'Lagos', country: 'Nigeria' })).toBe(
      'Ikeja, Lagos',
    );
    expect(placeName({ lgaOrCity: 'Lagos', state: 'Lagos' })).toBe('Lagos');
    expect(placeName({ country: 'Nigeria' })).toBe('Nigeria');
  });
});

const address = (id: string, at: { lat: number; lon: number }, contactName: string) =>
  ({
    _id: id,
    userId: 'u',
    deliveryId: 'd',
    role: 'origin',
    fields: {
      ...at,
      country: 'Nigeria',
      state: 'Lagos',
      lgaOrCity: id === 'o' ? 'Ikeja' : 'Eti Osa',
      address: '12 Allen Avenue',
      h3Index: '89',
      phrase: 'one.two.three',
      resolution: 9,
      contactName,
      contactPhone: '+2348031234567',
      contactEmail: 'someone@example.com',
      note: 'Gate code 4455',
    },
    createdAt: new Date(),
    updatedAt: new Date(),
  }) as unknown as StoredAddress;

/** Paid by its creator alone, as a wallet request is. */
const PAID = {
  owes: { creator: true, recipient: false },
  paid: { creator: true, recipient: false },
};

const delivery = {
  _id: 'd',
  trackingId: 'P2P-0123456789AB',
  lifecycle: { status: 'IN_TRANSIT', ...PAID },
  distanceKm: 21.4,
  fleetType: { id: 'f', name: 'Bike', icon: null },
  originId: 'o',
  destinationId: 'x',
  steps: [
    { id: '1', step: 'REQUEST_CREATED', active: false, hidden: false, updatedAt: new Date(0) },
    { id: '2', step: 'IN_TRANSIT', active: true, hidden: false, updatedAt: new Date(1000) },
    { id: '3', step: 'SECRET_STEP', active: false, hidden: true, updatedAt: new Date(2000) },
  ],
} as unknown as DeliveryRecord;

const courier: CourierOnDelivery = {
  name: 'Tunde <b>Bakare</b>',
  phone: '+2348000000001',
  profilePhoto: null,
  currentLocation: { country: 'Nigeria', state: 'Lagos', lgaOrCity: 'Yaba', ...YABA },
  eta: { from: '2026-11-24T10:10:00.000Z', to: '2026-11-24T10:30:00.000Z' },
  fleet: { regNo: 'LAG-123', make: 'Bajaj', model: 'Boxer', colour: 'Red', typeId: 'f' },
};

const addresses = new Map([
  ['o', address('o', IKEJA, 'Sola Adeyemi')],
  ['x', address('x', LEKKI, 'Ada Obi')],
]);

/** Searched for at once. */
const AT_ONCE = { searchFrom: null, now: new Date('2026-11-24T10:00:00.000Z') };

describe('toTrackingView', () => {
  const view = toTrackingView(delivery, addresses, courier, AT_ONCE);

  it('shows first names, place names and a drawing: no contact, street, note or coordinates', () => {
    const text = JSON.stringify(trackingState(view));
    for (const secret of [
      'Obi',
      'Adeyemi',
      'Bakare',
      '+234',
      '@',
      'Allen',
      'Gate code',
      'one.two.three',
      String(IKEJA.lat),
      String(YABA.lon),
      'SECRET_STEP',
    ]) {
      expect(text).not.toContain(secret);
    }
    expect(view).toMatchObject({
      status: 'IN_TRANSIT',
      live: true,
      terminal: false,
      pickup: { place: 'Ikeja, Lagos', firstName: 'Sola' },
      dropoff: { place: 'Eti Osa, Lagos', firstName: 'Ada' },
      courier: {
        firstName: 'Tunde',
        vehicle: { type: 'Bike', make: 'Bajaj', model: 'Boxer', colour: 'Red', regNo: 'LAG-123' },
        place: 'Yaba, Lagos',
      },
      // Rounded out on the page's marks: 10:00 + 5 minutes + 30 to its end.
      eta: { from: '2026-11-24T10:10:00.000Z', to: '2026-11-24T10:35:00.000Z' },
    });
    expect(view.steps.map((s) => s.label)).toEqual(['Booked', 'On the way']);
  });

  it('cannot tell a drop-off from another some 300 m away: the drawing and the trip are round figures', () => {
    // With the pickup's address public (a shop), an exact drawing and trip length gave the
    // drop-off to a few metres. Here two doors ~310 m apart, the trip's length as the
    // straight-line fallback prices it, read the same.
    const NEXT_DOOR = { lat: LEKKI.lat + 0.002, lon: LEKKI.lon + 0.002 };
    const viewTo = (door: typeof LEKKI) =>
      toTrackingView(
        { ...delivery, distanceKm: haversineKm(IKEJA, door) * 1.3 } as unknown as DeliveryRecord,
        new Map([
          ['o', address('o', IKEJA, 'Sola Adeyemi')],
          ['x', address('x', door, 'Ada Obi')],
        ]),
        courier,
        AT_ONCE,
      );
    const [here, there] = [viewTo(LEKKI), viewTo(NEXT_DOOR)];
    expect(here.distanceKm).toBe(28);
    expect(there).toEqual(here);
  });

  it('rounds the arrival window out to five minutes: its width told the distance left', () => {
    /** The page's window for a courier whose reckoned window is `from`–`to` (10:00 UTC). */
    const shown = (from: string, to: string) =>
      toTrackingView(delivery, addresses, { ...courier, eta: { from, to } }, AT_ONCE).eta;
    expect(shown('2026-11-24T10:12:34.000Z', '2026-11-24T10:27:01.000Z')).toEqual({
      from: '2026-11-24T10:10:00.000Z',
      to: '2026-11-24T10:35:00.000Z',
    });
    expect(shown('2026-11-24T10:10:00.000Z', '2026-11-24T10:10:00.000Z')).toEqual({
      from: '2026-11-24T10:10:00.000Z',
      to: '2026-11-24T10:15:00.000Z',
    });
  });

  it('names the courier a week after the delivery ended, and no longer after', () => {
    const endedAt = new Date('2026-11-24T10:00:00.000Z');
    const delivered = {
      ...delivery,
      lifecycle: { status: 'DELIVERED', ...PAID },
      assignment: { courierId: 'c', at: new Date(0) },
      steps: [
        ...delivery.steps,
        { id: '4', step: 'DELIVERED', active: true, hidden: false, updatedAt: endedAt },
      ],
    } as unknown as DeliveryRecord;
    const at = (days: number) => ({
      searchFrom: null,
      now: new Date(endedAt.getTime() + days * 86_400_000),
    });
    expect(toTrackingView(delivered, addresses, courier, at(6.9)).courier).toMatchObject({
      firstName: 'Tunde',
      vehicle: { regNo: 'LAG-123' },
    });
    const later = toTrackingView(delivered, addresses, courier, at(7.1));
    expect(later.courier).toBeNull();
    expect(JSON.stringify(trackingState(later))).not.toContain('LAG-123');
    expect(later.statusText).toBe('Delivered. Thank you!');
    // Not "No courier yet": one delivered it.
    expect(trackingState(later).regions.courier).toBe(
      '<p>Courier details are no longer shown.</p>',
    );
  });

  it('says why it shows no courier: none yet, none assigned, or theirs unreadable now', () => {
    const regionOf = (d: object, shown?: CourierOnDelivery, unreadable = false) =>
      trackingState(
        toTrackingView(d as DeliveryRecord, addresses, shown, AT_ONCE, null, unreadable),
      ).regions.courier;
    const searching = { ...delivery, lifecycle: { status: 'REQUEST_CREATED', ...PAID } };
    expect(regionOf(searching)).toBe('<p>No courier yet.</p>');
    const cancelled = { ...delivery, lifecycle: { status: 'CANCELLED', ...PAID } };
    expect(regionOf(cancelled)).toBe('<p>No courier was assigned.</p>');
    // Assigned, but courier-matching cannot be read at the moment: the status says a courier
    // is on the way, and the page does not contradict it.
    const assigned = { ...delivery, assignment: { courierId: 'c', at: new Date(0) } };
    expect(regionOf(assigned, undefined, true)).toBe(
      '<p>Courier details are unavailable right now.</p>',
    );
    // Read as none: the courier has left the directory, for good.
    expect(regionOf(assigned)).toBe('<p>Courier details are no longer shown.</p>');
    expect(regionOf(assigned, courier)).toContain('Tunde');
  });

  it('moves the window’s ends at the marks of the clock only, whatever the time left', () => {
    // Watched over time, an end that moved when now + time left crossed a mark told the time
    // left, and with it the distance. Within one 5-minute span of the clock, a courier standing
    // still (the same time left) reads the same window at every refresh.
    const span = Date.parse('2026-11-24T10:00:00.000Z');
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3 * 3600_000 }),
        fc.integer({ min: 0, max: 5 * 60_000 - 1 }),
        fc.integer({ min: 0, max: 5 * 60_000 - 1 }),
        (left, a, b) => {
          const windowAt = (offset: number) => {
            const now = new Date(span + offset);
            const eta = {
              from: new Date(now.getTime() + Math.ceil(left * 0.85)).toISOString(),
              to: new Date(now.getTime() + Math.ceil(left * 1.3)).toISOString(),
            };
            return toTrackingView(
              delivery,
              addresses,
              { ...courier, eta },
              { searchFrom: null, now },
            ).eta;
          };
          expect(windowAt(a)).toEqual(windowAt(b));
        },
      ),
    );
  });

  it('names the courier’s own vehicle type when a larger one carries the load', () => {
    const inACar = { ...courier, fleet: { ...courier.fleet, typeId: 'car', make: 'Toyota' } };
    const named = toTrackingView(delivery, addresses, inACar, AT_ONCE, 'Car');
    expect(named.courier?.vehicle.type).toBe('Car');
    expect(trackingState(named).regions.courier).toContain('Red Toyota Boxer (Car)');
    // Geo could not say: unnamed, never the type the delivery was priced for.
    const unnamed = toTrackingView(delivery, addresses, inACar, AT_ONCE);
    expect(unnamed.courier?.vehicle.type).toBeNull();
    const region = trackingState(unnamed).regions.courier;
    expect(region).toContain('Red Toyota Boxer</dd>');
    expect(region).not.toContain('Bike');
  });

  it('no longer follows the courier once the delivery is going back to the sender', () => {
    const returning = toTrackingView(
      { ...delivery, lifecycle: { status: 'RETURNING', ...PAID } } as unknown as DeliveryRecord,
      addresses,
      courier,
      AT_ONCE,
    );
    expect(returning).toMatchObject({ live: false, eta: null, courier: { place: null } });
    expect(returning.map.courier).toBeNull();
    expect(JSON.stringify(trackingState(returning))).not.toContain('Yaba');
  });

  it('has no courier and no marker before one is assigned', () => {
    const waiting = toTrackingView(
      {
        ...delivery,
        lifecycle: { status: 'REQUEST_CREATED', ...PAID },
      } as unknown as DeliveryRecord,
      addresses,
      undefined,
      AT_ONCE,
    );
    expect(waiting).toMatchObject({ courier: null, eta: null, live: false });
    expect(waiting.map.courier).toBeNull();
    expect(trackingState(waiting).regions.map).not.toContain('courier-marker');
    expect(waiting.statusText).toBe('Your delivery is booked. We are finding a courier.');
  });

  it('tells of a SCHEDULED delivery waiting for its courier its day and slot', () => {
    const booked = {
      ...delivery,
      lifecycle: { status: 'REQUEST_CREATED', ...PAID },
      deliveryDate: new Date('2026-12-24T00:00:00.000Z'),
      deliverySlot: '09:00 - 12:00',
    } as unknown as DeliveryRecord;
    const searchFrom = new Date('2026-12-24T06:45:00.000Z');
    const textAt = (delivery: DeliveryRecord, now: string) =>
      toTrackingView(delivery, addresses, undefined, { searchFrom, now: new Date(now) }).statusText;
    expect(textAt(booked, '2026-12-20T10:00:00.000Z')).toBe(
      'Your delivery is booked for Thursday, 24 December 2026, 09:00 - 12:00. A courier is found for it on the day.',
    );
    expect(textAt(booked, '2026-12-24T06:44:59.999Z')).toMatch(/found for it on the day\.$/);
    // Its day has come: its courier is being looked for.
    expect(textAt(booked, '2026-12-24T06:45:00.000Z')).toBe(
      'Your delivery is booked for Thursday, 24 December 2026, 09:00 - 12:00. We are finding a courier.',
    );
    expect(toTrackingView(booked, addresses, undefined, AT_ONCE).statusText).toMatch(
      /We are finding a courier\.$/,
    );
    // A share still owed: nobody is looked for until it is paid, whatever the day.
    const splitUnpaid = {
      ...booked,
      lifecycle: {
        status: 'REQUEST_CREATED',
        owes: { creator: true, recipient: true },
        paid: { creator: true, recipient: false },
      },
    } as unknown as DeliveryRecord;
    expect(textAt(splitUnpaid, '2026-12-24T07:00:00.000Z')).toBe(
      'Your delivery is booked for Thursday, 24 December 2026, 09:00 - 12:00. A courier is found for it once it is paid.',
    );
    const unscheduled = { ...splitUnpaid, deliveryDate: null, deliverySlot: null };
    expect(toTrackingView(unscheduled, addresses, undefined, AT_ONCE).statusText).toBe(
      'Your delivery is booked. A courier is found for it once it is paid.',
    );
    const assigned = {
      ...booked,
      lifecycle: { status: 'COURIER_ASSIGNED', ...PAID },
    } as DeliveryRecord;
    expect(textAt(assigned, '2026-12-24T07:00:00.000Z')).toBe(
      'A courier is on the way to collect your delivery.',
    );
  });
});

describe('why a delivery was called off, as its page says', () => {
  const cases = deliveries();

  it('names the sender for their cancel, the payment for one that did not go through', () => {
    const text = (name: keyof typeof cases) => {
      const { delivery, addresses } = cases[name];
      return toTrackingView(delivery, addresses, undefined, { searchFrom: null, now: NOW })
        .statusText;
    };
    expect(text('cancelled')).toBe(
      'This delivery was cancelled by the sender. Contact them if you expected it.',
    );
    // The recipient's own checkout declined, say: not the sender's doing.
    expect(text('checkout failed')).toBe(
      'This delivery was called off because its payment did not go through. Contact the sender if you expected it.',
    );
    expect(cases['checkout failed'].delivery.paymentFailed).toMatchObject({ share: 'creator' });
  });
});

describe('the clock a delivery is shown in', () => {
  // The page's window is 10:10–10:35 UTC: 11:10–11:35 in Lagos, 05:10–05:35 in New York.
  it('is the Lagos clock for a delivery stored before deliveries kept their tariff’s zone', () => {
    const view = toTrackingView(delivery, addresses, courier, AT_ONCE);
    expect(view.timeZone).toBe('Africa/Lagos');
    expect(trackingState(view).regions.eta).toContain('>11:10</time>');
    expect(trackingState(view).regions.eta).toContain('(Lagos time)');
  });

  it('dates the arrival window: once for a window within a day, each end across midnight', () => {
    const within = trackingState(toTrackingView(delivery, addresses, courier, AT_ONCE)).regions.eta;
    expect(within).toMatch(
      /Expected between <time[^>]*>11:10<\/time> and <time[^>]*>11:35<\/time> on 24 Nov \(Lagos time\)/,
    );
    // A long trip's window, 23:20 to 00:45 in Lagos (its end rounded up to 00:50).
    const eta = { from: '2026-11-24T22:20:00.000Z', to: '2026-11-24T23:45:00.000Z' };
    const overnight = trackingState(
      toTrackingView(delivery, addresses, { ...courier, eta }, AT_ONCE),
    ).regions.eta;
    expect(overnight).toMatch(
      />24 Nov, 23:20<\/time> and <time[^>]*>25 Nov, 00:50<\/time> \(Lagos time\)/,
    );
  });

  it('is the zone of the tariff the delivery was priced by', () => {
    const abroad = { ...delivery, timeZone: 'America/New_York' } as DeliveryRecord;
    const view = toTrackingView(abroad, addresses, courier, AT_ONCE);
    const { eta, steps } = trackingState(view).regions;
    expect(eta).toContain('>05:10</time>');
    expect(eta).toContain('>05:35</time>');
    expect(eta).toContain('(New York time)');
    const firstStepAt = new Date(view.steps[0].at);
    const newYork = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'America/New_York',
      hour: '2-digit',
      minute: '2-digit',
    }).format(firstStepAt);
    expect(steps).toContain(`, ${newYork}</time>`);
    const utc = toTrackingView(
      { ...delivery, timeZone: 'UTC' } as DeliveryRecord,
      addresses,
      courier,
      AT_ONCE,
    );
    expect(trackingState(utc).regions.eta).toContain('>10:10</time> and');
    expect(trackingState(utc).regions.eta).toContain('(UTC)');
  });
});

describe('trackingPage', () => {
  const evil = toTrackingView(
    delivery,
    new Map([
      ['o', address('o', IKEJA, '<script>alert(1)</script> X')],
      ['x', address('x', LEKKI, 'Ada Obi')],
    ]),
    { ...courier, name: '"><img src=x onerror=alert(1)> Y' },
    AT_ONCE,
  );
  const html = trackingPage(trackingState(evil));

  it('escapes every text, in the markup and in the state it embeds', () => {
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img');
    const embedded = /<script type="application\/json" id="tr-state">(.*?)<\/script>/.exec(html);
    expect(embedded).not.toBeNull();
    expect(() => JSON.parse((embedded as RegExpExecArray)[1])).not.toThrow();
  });

  describe('its script', () => {
    const script = [...html.matchAll(/<script>(.*?)<\/script>/g)].map((m) => m[1])[0];

    /**
     * The script run against a page of fakes whose embedded state is `shown`: its EventSources,
     * the timers it set, and the markup of the regions it swapped.
     */
    function run(shown: object = { regions: {} }) {
      const regions: Record<string, { innerHTML: string }> = {};
      const sources: FakeSource[] = [];
      const timers: (() => void)[] = [];
      class FakeSource {
        readyState = 0;
        private readonly listeners: Record<string, ((e: { data?: string }) => void)[]> = {};
        constructor(readonly url: string) {
          sources.push(this);
        }
        addEventListener(type: string, listener: (e: { data?: string }) => void) {
          (this.listeners[type] ??= []).push(listener);
        }
        close() {
          this.readyState = 2;
        }
        emit(type: string, e: { data?: string } = {}) {
          for (const listener of this.listeners[type] ?? []) listener(e);
        }
      }
      const state = { textContent: JSON.stringify(shown) };
      const context = {
        window: { EventSource: FakeSource },
        EventSource: FakeSource,
        document: {
          getElementById: (id: string) =>
            id === 'tr-state' ? state : (regions[id] ??= { innerHTML: '' }),
        },
        location: { pathname: '/track/P2P-0123456789AB' },
        setTimeout: (fn: () => void) => void timers.push(fn),
        Math,
        JSON,
      };
      runInNewContext(script, context);
      return { sources, timers, regions };
    }

    it('passes over a state older than the one it shows, as a feed read before the page sends', () => {
      const { sources, regions } = run({ regions: { status: 'Delivered' }, version: 9 });
      const send = (status: string, version?: number) =>
        sources[0].emit('state', {
          data: JSON.stringify({ view: { terminal: false, version }, regions: { status } }),
        });
      send('At the drop-off', 8);
      expect(regions['tr-status']).toBeUndefined();
      send('Delivered, and thanked', 10);
      expect(regions['tr-status'].innerHTML).toBe('Delivered, and thanked');
      send('Delivered', 9);
      expect(regions['tr-status'].innerHTML).toBe('Delivered, and thanked');
      // A state of an order node before versions is shown as it comes.
      send('Unversioned');
      expect(regions['tr-status'].innerHTML).toBe('Unversioned');
    });

    it('asks for its stream again, later, when it was refused; not when the delivery is over', () => {
      const { sources, timers } = run();
      expect(sources.map((s) => s.url)).toEqual(['/track/P2P-0123456789AB/events']);
      // Refused (429): EventSource closes for good and tells of an error.
      sources[0].readyState = 2;
      sources[0].emit('error');
      expect(timers).toHaveLength(1);
      timers[0]();
      expect(sources).toHaveLength(2);
      // A dropped connection EventSource reconnects itself: nothing more to do.
      sources[1].readyState = 0;
      sources[1].emit('error');
      expect(timers).toHaveLength(1);
      // Ended by the server: the delivery is over, nothing to ask again.
      sources[1].emit('end');
      sources[1].emit('error');
      expect(timers).toHaveLength(1);
    });
  });

  it('runs only the script its CSP names by hash', () => {
    const scripts = [...html.matchAll(/<script>(.*?)<\/script>/g)].map((m) => m[1]);
    expect(scripts).toHaveLength(1);
    const hash = createHash('sha256').update(scripts[0]).digest('base64');
    expect(TRACKING_PAGE_CSP).toContain(`script-src 'sha256-${hash}'`);
  });

  it('has landmarks, one h1, and the status in a polite live region', () => {
    expect(html.match(/<h1>/g)).toHaveLength(1);
    for (const landmark of ['<header>', '<main>', '<footer>']) expect(html).toContain(landmark);
    expect(html).toContain('<div id="tr-status" role="status" aria-live="polite">');
    expect(html).toContain('<html lang="en">');
  });
});

import fc from 'fast-check';
import {
  DEPARTURE_MS,
  HANDOVER_MS,
  nextSimulatedStep,
  simulatedPosition,
  type SimulationRoute,
} from '../../../services/order/simulation';

const route: SimulationRoute = {
  start: { lat: 6.61, lon: 3.35 },
  pickup: { lat: 6.6, lon: 3.35 },
  dropoff: { lat: 6.45, lon: 3.47 },
  approachKm: 1.5,
  tripKm: 30,
  speedKmh: 30,
};

describe('nextSimulatedStep', () => {
  it('walks the courier run in order, each leg at the fleet speed, scaled', () => {
    expect(nextSimulatedStep('delivered', 'COURIER_ASSIGNED', route, 1)).toEqual({
      step: 'arrived-at-pickup',
      afterMs: 3 * 60_000,
    });
    expect(nextSimulatedStep('delivered', 'ARRIVED_AT_PICKUP', route, 60)?.afterMs).toBe(
      HANDOVER_MS / 60,
    );
    expect(nextSimulatedStep('delivered', 'COLLECTED', route, 1)).toEqual({
      step: 'in-transit',
      afterMs: DEPARTURE_MS,
    });
    expect(nextSimulatedStep('delivered', 'IN_TRANSIT', route, 60)).toEqual({
      step: 'arrived-at-dropoff',
      afterMs: 60_000,
    });
    expect(nextSimulatedStep('delivered', 'ARRIVED_AT_DROPOFF', route, 1)?.step).toBe('delivered');
  });

  it('a failing run gives up half-way and brings the packages back', () => {
    expect(nextSimulatedStep('failed', 'IN_TRANSIT', route, 60)).toEqual({
      step: 'failed',
      afterMs: 30_000,
    });
    expect(nextSimulatedStep('failed', 'RETURNING', route, 60)?.step).toBe('returned');
  });

  it('has nothing to do before assignment or once over', () => {
    for (const status of ['REQUEST_CREATED', 'DELIVERED', 'RETURNED', 'CANCELLED'] as const) {
      expect(nextSimulatedStep('delivered', status, route, 60)).toBeNull();
    }
  });
});

describe('simulatedPosition', () => {
  it('moves from the start to the pickup, then along the trip', () => {
    expect(simulatedPosition('delivered', 'COURIER_ASSIGNED', route, 0)).toEqual(route.start);
    expect(simulatedPosition('delivered', 'COURIER_ASSIGNED', route, 1)).toEqual(route.pickup);
    expect(simulatedPosition('delivered', 'IN_TRANSIT', route, 1)).toEqual(route.dropoff);
    expect(simulatedPosition('delivered', 'ARRIVED_AT_DROPOFF', route, 0.3)).toEqual(route.dropoff);
  });

  it('goes back and forth across the antimeridian the short way (Fiji, Taveuni)', () => {
    const fiji = {
      ...route,
      pickup: { lat: -16.8, lon: 179.9 },
      dropoff: { lat: -16.9, lon: -179.9 },
    };
    const halfway = simulatedPosition('failed', 'RETURNING', fiji, 0);
    expect(Math.abs(halfway?.lon as number)).toBeCloseTo(180, 9);
    const underWay = simulatedPosition('delivered', 'IN_TRANSIT', fiji, 0.75);
    expect(underWay?.lon).toBeCloseTo(-179.95, 9);
  });

  it('stays on the segment of its leg, whatever the fraction (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: -2, max: 3, noNaN: true }), (fraction) => {
        const at = simulatedPosition('delivered', 'IN_TRANSIT', route, fraction);
        if (!at) throw new Error('in transit has a position');
        const [lo, hi] = [route.dropoff.lat, route.pickup.lat];
        expect(at.lat).toBeGreaterThanOrEqual(lo - 1e-12);
        expect(at.lat).toBeLessThanOrEqual(hi + 1e-12);
      }),
    );
  });
});

import { tripOf } from '../../../services/pricing/quote';
import { rejectionOf } from '../helpers';

const PARAMS = { origin: 'Ikeja, Lagos', destination: 'Lekki, Lagos', fleetTypeId: 'car' };
const ROUTE = {
  distance: { distanceKm: 27.3, etaSeconds: 3276 },
  routeType: 'INTER_CITY',
  origin: { country: 'Nigeria' },
  destination: { country: 'Nigeria' },
};

/** A caller whose geo answers `geo.trip` with `trip` (or its error), and `geo.route` with ROUTE. */
function geo(trip: () => unknown) {
  const asked: string[] = [];
  const caller = {
    meta: {},
    call: async (action: string, params: unknown) => {
      asked.push(action);
      expect(params).toEqual(PARAMS);
      return action === 'geo.trip' ? trip() : ROUTE;
    },
  };
  return { caller, asked };
}

describe('the trip pricing asks of geo', () => {
  it('is geo.trip’s, with whether the road was measured', async () => {
    const { caller, asked } = geo(() => ({ ...ROUTE, roadMeasured: true }));
    expect(await tripOf(caller, PARAMS)).toEqual({ ...ROUTE, roadMeasured: true });
    expect(asked).toEqual(['geo.trip']);
  });

  it('is geo.route’s, not known whether its road was measured, from a geo of the version before', async () => {
    const { caller, asked } = geo(() => {
      throw Object.assign(new Error('Service geo.trip is not found.'), {
        type: 'SERVICE_NOT_FOUND',
        data: { action: 'geo.trip' },
      });
    });
    expect(await tripOf(caller, PARAMS)).toEqual({ ...ROUTE, roadMeasured: undefined });
    expect(asked).toEqual(['geo.trip', 'geo.route']);
  });

  it('fails as geo.trip failed otherwise, not asked again: another action not found is not geo.trip', async () => {
    const nested = geo(() => {
      throw Object.assign(new Error('Service order.getAddress is not found.'), {
        type: 'SERVICE_NOT_FOUND',
        data: { action: 'order.getAddress' },
      });
    });
    expect(await rejectionOf(() => tripOf(nested.caller, PARAMS))).toMatchObject({
      type: 'SERVICE_NOT_FOUND',
    });
    expect(nested.asked).toEqual(['geo.trip']);
    const { caller, asked } = geo(() => {
      throw Object.assign(new Error('Request timed out'), { type: 'REQUEST_TIMEOUT', code: 504 });
    });
    expect(await rejectionOf(() => tripOf(caller, PARAMS))).toMatchObject({ code: 504 });
    expect(asked).toEqual(['geo.trip']);
  });
});

import type { CourierRecord } from '../../../services/courier-matching/store';
import { toCourierView } from '../../../services/courier-matching/views';

/**
 * A courier's last location in the views: the position in Redis (the last report taken), else
 * the latest of the one the flusher wrote to `courier_locations` and the one on the courier's
 * own document (written before that collection existed, or by a replica of the version before;
 * decision 99).
 */
const at = (minute: number) => new Date(Date.UTC(2026, 11, 2, 9, minute));
const place = (minute: number) => ({ lat: 6.5 + minute / 100, lon: 3.4, at: at(minute) });

const courier = (lastLocation: CourierRecord['lastLocation']): CourierRecord => ({
  _id: '0b6f7c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
  name: 'Amaka Nwosu',
  phone: '+2348031234567',
  profilePhoto: null,
  fleet: { typeId: 'bike', regNo: 'LAG-123', make: 'Bajaj', model: 'Boxer', colour: 'Red' },
  active: true,
  lastLocation,
  createdAt: at(0),
  updatedAt: at(0),
});

const shown = (minute: number) => ({ ...place(minute), at: at(minute).toISOString() });

describe('toCourierView', () => {
  it('shows Redis’s, the last report taken, even timed before one written by a clock ahead', () => {
    expect(toCourierView(courier(place(1)), place(3), place(2)).lastLocation).toEqual(shown(3));
    expect(toCourierView(courier(place(1)), place(2), place(3)).lastLocation).toEqual(shown(2));
    expect(toCourierView(courier(place(3)), place(1), place(2)).lastLocation).toEqual(shown(1));
  });

  it('without Redis’s, shows the latest of the written one and the document’s own', () => {
    expect(toCourierView(courier(place(1)), undefined, place(2)).lastLocation).toEqual(shown(2));
    expect(toCourierView(courier(place(3)), undefined, place(2)).lastLocation).toEqual(shown(3));
  });

  it('shows whichever there is, Redis’s on a tie, and null for none', () => {
    expect(toCourierView(courier(null)).lastLocation).toBeNull();
    expect(toCourierView(courier(place(4))).lastLocation).toEqual(shown(4));
    expect(toCourierView(courier(null), undefined, place(5)).lastLocation).toEqual(shown(5));
    const live = { lat: 1, lon: 2, at: at(6) };
    expect(toCourierView(courier(null), live, place(6)).lastLocation).toEqual({
      lat: 1,
      lon: 2,
      at: at(6).toISOString(),
    });
  });
});

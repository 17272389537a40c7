import type { CourierView } from '../../libs/contracts/matching';
import type { CourierRecord } from './store';

export function toCourierView(record: CourierRecord): CourierView {
  const { fleet, lastLocation } = record;
  return {
    id: record._id,
    name: record.name,
    phone: record.phone,
    profilePhoto: record.profilePhoto ?? null,
    fleet: {
      typeId: fleet.typeId,
      regNo: fleet.regNo,
      make: fleet.make,
      model: fleet.model,
      colour: fleet.colour,
    },
    active: record.active,
    lastLocation: lastLocation
      ? { lat: lastLocation.lat, lon: lastLocation.lon, at: lastLocation.at.toISOString() }
      : null,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

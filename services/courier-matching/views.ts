import type { CourierLocation, CourierView } from '../../libs/contracts/matching';
import type { Position } from './positions';
import type { CourierLocationRecord, CourierRecord } from './store';
import type { CourierTokenRecord } from './token-store';

const locationView = (location: CourierLocationRecord): CourierLocation => ({
  lat: location.lat,
  lon: location.lon,
  at: location.at.toISOString(),
});

/** The later of the two: Redis holds the last report, MongoDB the last one written there. */
function lastLocation(stored: CourierLocationRecord | null, live: Position | undefined) {
  if (!live) return stored;
  if (!stored) return live;
  return live.at.getTime() >= stored.at.getTime() ? live : stored;
}

/** `live`: the courier's position in Redis, newer than the document's when it moved since. */
export function toCourierView(record: CourierRecord, live?: Position): CourierView {
  const { fleet } = record;
  const location = lastLocation(record.lastLocation, live);
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
    lastLocation: location ? locationView(location) : null,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

export const toCourierTokenView = (token: CourierTokenRecord) => ({
  id: token.tokenId,
  courierId: token.courierId,
  createdAt: token.createdAt.toISOString(),
  lastUsedAt: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
});

export const toCreatedCourierToken = (token: CourierTokenRecord, plaintext: string) => ({
  id: token.tokenId,
  courierId: token.courierId,
  token: plaintext,
  createdAt: token.createdAt.toISOString(),
});

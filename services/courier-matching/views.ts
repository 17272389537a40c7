import type { CourierLocation, CourierView } from '../../libs/contracts/matching';
import type { Position } from './positions';
import type { CourierLocationRecord, CourierRecord } from './store';
import type { CourierTokenRecord } from './token-store';

const locationView = (location: CourierLocationRecord): CourierLocation => ({
  lat: location.lat,
  lon: location.lon,
  at: location.at.toISOString(),
});

/**
 * The latest of them: MongoDB holds the last one written there, a courier's own document the
 * last written before `courier_locations` (or by a replica of the version before).
 */
function lastLocation(...candidates: (CourierLocationRecord | null | undefined)[]) {
  let latest: CourierLocationRecord | null = null;
  for (const c of candidates) {
    if (c && (!latest || c.at.getTime() > latest.at.getTime())) latest = c;
  }
  return latest;
}

/**
 * `live`: the courier's position in Redis, the last report taken, shown when there is one: the
 * one written to MongoDB (`stored`) is at most as new, unless a replica whose clock ran ahead
 * timed it later (a report older by more than REORDER_WINDOW_MS is taken in Redis, not written
 * over it). Without it, the latest of the written one and, for a courier written before
 * `courier_locations`, its own.
 */
export function toCourierView(
  record: CourierRecord,
  live?: Position,
  stored?: CourierLocationRecord,
): CourierView {
  const { fleet } = record;
  const location = live ?? lastLocation(stored, record.lastLocation);
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
    virtual: record.virtual === true,
    lastLocation: location ? locationView(location) : null,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

/** Who made a token, as its views name them: null for a token made before it was recorded. */
const madeBy = (token: CourierTokenRecord) => ({
  createdBy: token.createdBy ?? null,
  createdByOperatorTokenId: token.createdByTokenId ?? null,
});

export const toCourierTokenView = (token: CourierTokenRecord) => ({
  id: token.tokenId,
  courierId: token.courierId,
  createdAt: token.createdAt.toISOString(),
  ...madeBy(token),
  lastUsedAt: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
});

export const toCreatedCourierToken = (token: CourierTokenRecord, plaintext: string) => ({
  id: token.tokenId,
  courierId: token.courierId,
  token: plaintext,
  createdAt: token.createdAt.toISOString(),
  ...madeBy(token),
});

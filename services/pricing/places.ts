import { call } from '../../libs/contracts';
import type { Area } from '../../libs/contracts/geo';
import { isWaybillError, type WaybillErrorData } from '../../libs/errors';
import type { WaybillContext } from '../../libs/service';

/**
 * A place an operator names (a tier, a courier rule) checked by geo and spelled as resolved
 * addresses spell them, so that it matches them; geo answers 404 with a suggestion otherwise
 * (`missingPlace` reads it).
 */
export function findArea(
  ctx: WaybillContext<unknown>,
  place: { countryCode: string; state?: string; lgaOrCity?: string },
): Promise<Area> {
  return call(ctx, 'geo.findArea', {
    countryCode: place.countryCode,
    ...(place.state ? { state: place.state } : {}),
    ...(place.lgaOrCity ? { lgaOrCity: place.lgaOrCity } : {}),
  });
}

export type PlacePart = 'countryCode' | 'state' | 'lgaOrCity';

/** What geo's 404 of `findArea` says and which part of the place it names; else undefined. */
export function missingPlace(err: unknown): { part: PlacePart; message: string } | undefined {
  if (!isWaybillError(err) || err.code !== 404) return undefined;
  const field = (err.data as WaybillErrorData | undefined)?.errors?.[0]?.field;
  const part = (['countryCode', 'state', 'lgaOrCity'] as const).find((p) => p === field);
  return part ? { part, message: err.message } : undefined;
}

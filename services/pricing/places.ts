import { call } from '../../libs/contracts';
import type { Area } from '../../libs/contracts/geo';
import type { WaybillContext } from '../../libs/service';

/**
 * A place an operator names (a tier, a courier rule) checked by geo and spelled as resolved
 * addresses spell it, so that it matches them; geo answers 404 with a suggestion otherwise.
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

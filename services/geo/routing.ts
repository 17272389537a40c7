import type { Config } from '../../libs/config';
import type { ResolvedAddress, Trip } from '../../libs/contracts/geo';
import { etaSeconds, haversineKm, roundDistanceKm } from './distance';
import { createOsrmClient, resolveRoadDistance, type OsrmClient } from './osrm';
import { classifyRoute } from './route-type';

export type TripSummary = Pick<Trip, 'distance' | 'routeType' | 'roadMeasured'>;

/**
 * Distance (max of straight line and road), ETA at a fleet speed, the route type, and whether
 * the road was measured.
 */
export class Router {
  private readonly osrm: OsrmClient | undefined;

  constructor(
    private readonly config: Config['routing'],
    onOsrmFailure: (reason: string) => void,
  ) {
    this.osrm = config.osrmUrl
      ? createOsrmClient({
          baseUrl: config.osrmUrl,
          profile: config.osrmProfile,
          timeoutMs: config.osrmTimeoutMs,
          failureThreshold: config.osrmFailureThreshold,
          coolDownMs: config.osrmCoolDownMs,
          maxAnswerBytes: config.osrmMaxAnswerBytes,
          onFailure: onOsrmFailure,
        })
      : undefined;
  }

  async route(
    origin: ResolvedAddress,
    destination: ResolvedAddress,
    speedKmh: number,
  ): Promise<TripSummary> {
    const straightKm = haversineKm(origin, destination);
    const { distanceKm, source } = await resolveRoadDistance(straightKm, origin, destination, {
      osrm: this.osrm,
      circuity: this.config.circuity,
    });
    const rounded = roundDistanceKm(distanceKm);
    return {
      distance: { distanceKm: rounded, etaSeconds: etaSeconds(rounded, speedKmh) },
      routeType: classifyRoute(routePlace(origin), routePlace(destination)),
      roadMeasured: source === 'osrm',
    };
  }
}

function routePlace(address: ResolvedAddress) {
  return {
    countryCode: String(address.countryCode ?? address.country),
    stateCode: address.admin1Id === undefined ? undefined : String(address.admin1Id),
    regionalZone: address.regionalZone === undefined ? undefined : String(address.regionalZone),
    continentCode: String(address.continentCode ?? ''),
  };
}

import { isFields } from '../../libs/fields';
import { quote, quoted } from '../../libs/outbound-fetch';
import {
  isGeoPoint,
  roadDistanceKm as estimateRoadKm,
  routeDistance,
  type GeoPoint,
} from './distance';
import { createUpstream, unhealthy, type Outcome, type UpstreamOptions } from './upstream';

export const DEFAULT_OSRM_PROFILE = 'driving';

/** Anything that can measure a road: the OSRM client, or a stub in tests. */
export interface RoadDistanceSource {
  /** Kilometres by road, or null when no road distance could be had (the reason is reported). */
  roadDistanceKm(origin: GeoPoint, destination: GeoPoint): Promise<number | null>;
}

/** The OSRM client is one road-distance source. */
export type OsrmClient = RoadDistanceSource;

export interface OsrmClientOptions extends UpstreamOptions {
  profile?: string;
}

/** OSRM limits coordinates to six decimals (about 0.1 m); fixed notation avoids `1e-7`. */
const coordinate = (point: GeoPoint): string => `${point.lon.toFixed(6)},${point.lat.toFixed(6)}`;

/**
 * Reads one OSRM route answer. OSRM sends a JSON `code` with every answer, and HTTP 400
 * with `NoRoute`/`NoSegment` when the server is fine but the points are not connected by
 * road (another island, another continent): such answers must not open the circuit.
 */
function readAnswer(status: number, text: string): Outcome<number> {
  if (status >= 500) return unhealthy(`HTTP ${status}${quoted(text)}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return unhealthy(`HTTP ${status}: answer is not JSON${quoted(text)}`);
  }
  if (!isFields(body) || typeof body.code !== 'string') {
    return unhealthy(`HTTP ${status}: answer has no OSRM code`);
  }
  if (body.code !== 'Ok') {
    const message = typeof body.message === 'string' ? quoted(body.message) : '';
    return { ok: false, reason: `no route (${quote(body.code)})${message}`, unhealthy: false };
  }
  if (status < 200 || status > 299) return unhealthy(`HTTP ${status} with code Ok`);
  const route = Array.isArray(body.routes) ? (body.routes[0] as unknown) : undefined;
  const metres = isFields(route) ? route.distance : undefined;
  if (typeof metres !== 'number' || !Number.isFinite(metres) || metres < 0) {
    return unhealthy('code Ok without a valid routes[0].distance');
  }
  return { ok: true, value: metres / 1000 };
}

/**
 * Road distances from an OSRM-compatible server. Never throws once created: every
 * failure is reported through `onFailure` and answered with null so that the caller
 * falls back to an estimate. Throws at creation on bad options (a configuration error).
 * Answers over `maxAnswerBytes`, and the circuit breaker: `createUpstream`.
 */
export function createOsrmClient(options: OsrmClientOptions): OsrmClient {
  const profile = options.profile ?? DEFAULT_OSRM_PROFILE;
  if (!/^[A-Za-z0-9_-]+$/.test(profile)) throw new RangeError(`bad OSRM profile: ${profile}`);
  const upstream = createUpstream('OSRM', options);
  const headers = { accept: 'application/json' };

  return {
    async roadDistanceKm(origin, destination) {
      if (!isGeoPoint(origin) || !isGeoPoint(destination)) {
        return upstream.fail(
          'invalid coordinates: lat must be in [-90, 90] and lon in [-180, 180]',
        );
      }
      const path =
        `/route/v1/${profile}/${coordinate(origin)};${coordinate(destination)}` +
        '?overview=false&alternatives=false&steps=false';
      const outcome = await upstream.get(path, headers, readAnswer);
      return outcome.ok ? outcome.value : null;
    },
  };
}

export type DistanceSource = 'osrm' | 'estimate';

export interface ResolveRoadDistanceOptions {
  /** Absent when no OSRM server is configured. */
  osrm?: RoadDistanceSource;
  /** Road over straight-line ratio of the fallback estimate, >= 1. */
  circuity: number;
}

export interface ResolvedDistance {
  /** max(straight line, road); unrounded, see roundDistanceKm for the API. */
  distanceKm: number;
  /** Where the road distance came from. */
  source: DistanceSource;
}

/**
 * The trip distance: road distance from OSRM when it answers, else the straight line
 * times `circuity`; never less than the straight line.
 */
export async function resolveRoadDistance(
  straightKm: number,
  origin: GeoPoint,
  destination: GeoPoint,
  options: ResolveRoadDistanceOptions,
): Promise<ResolvedDistance> {
  // Computed first so that a bad circuity fails loudly even while OSRM answers.
  const estimateKm = estimateRoadKm(straightKm, options.circuity);
  const roadKm = options.osrm ? await options.osrm.roadDistanceKm(origin, destination) : null;
  if (roadKm === null) {
    return { distanceKm: routeDistance({ straightKm, roadKm: estimateKm }), source: 'estimate' };
  }
  return { distanceKm: routeDistance({ straightKm, roadKm }), source: 'osrm' };
}

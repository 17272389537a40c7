import {
  isGeoPoint,
  roadDistanceKm as estimateRoadKm,
  routeDistance,
  type GeoPoint,
} from './distance';
import { checkedBaseUrl, describeFetchError, isRecord, quote, quoted } from './upstream';

export const DEFAULT_OSRM_PROFILE = 'driving';
export const DEFAULT_FAILURE_THRESHOLD = 5;
export const DEFAULT_COOL_DOWN_MS = 30_000;

/** Anything that can measure a road: the OSRM client, or a stub in tests. */
export interface RoadDistanceSource {
  /** Kilometres by road, or null when no road distance could be had (the reason is reported). */
  roadDistanceKm(origin: GeoPoint, destination: GeoPoint): Promise<number | null>;
}

/** The OSRM client is one road-distance source. */
export type OsrmClient = RoadDistanceSource;

export interface OsrmClientOptions {
  /** Server root, path prefix allowed: `http://127.0.0.1:5000`, `https://maps.example/osrm`. */
  baseUrl: string;
  /** Budget of one whole call, body included. */
  timeoutMs: number;
  profile?: string;
  /** Consecutive failures that open the circuit. */
  failureThreshold?: number;
  /** How long an open circuit skips calls before one probe is let through. */
  coolDownMs?: number;
  /** Milliseconds clock; injected by tests. */
  now?: () => number;
  /** Called once for every null answer, with why; the service logs it. */
  onFailure?: (reason: string) => void;
}

/** `unhealthy` failures count towards the circuit breaker; the others are real answers. */
type Outcome = { ok: true; km: number } | { ok: false; reason: string; unhealthy: boolean };

const unhealthy = (reason: string): Outcome => ({ ok: false, reason, unhealthy: true });

/** OSRM limits coordinates to six decimals (about 0.1 m); fixed notation avoids `1e-7`. */
const coordinate = (point: GeoPoint): string => `${point.lon.toFixed(6)},${point.lat.toFixed(6)}`;

/**
 * Reads one OSRM route answer. OSRM sends a JSON `code` with every answer, and HTTP 400
 * with `NoRoute`/`NoSegment` when the server is fine but the points are not connected by
 * road (another island, another continent): such answers must not open the circuit.
 */
function readAnswer(status: number, text: string): Outcome {
  if (status >= 500) return unhealthy(`HTTP ${status}${quoted(text)}`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return unhealthy(`HTTP ${status}: answer is not JSON${quoted(text)}`);
  }
  if (!isRecord(body) || typeof body.code !== 'string') {
    return unhealthy(`HTTP ${status}: answer has no OSRM code`);
  }
  if (body.code !== 'Ok') {
    const message = typeof body.message === 'string' ? quoted(body.message) : '';
    return { ok: false, reason: `no route (${quote(body.code)})${message}`, unhealthy: false };
  }
  if (status < 200 || status > 299) return unhealthy(`HTTP ${status} with code Ok`);
  const route = Array.isArray(body.routes) ? (body.routes[0] as unknown) : undefined;
  const metres = isRecord(route) ? route.distance : undefined;
  if (typeof metres !== 'number' || !Number.isFinite(metres) || metres < 0) {
    return unhealthy('code Ok without a valid routes[0].distance');
  }
  return { ok: true, km: metres / 1000 };
}

function checkedCount(value: number, what: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${what} must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

/**
 * Road distances from an OSRM-compatible server. Never throws once created: every
 * failure is reported through `onFailure` and answered with null so that the caller
 * falls back to an estimate. Throws at creation on bad options (a configuration error).
 *
 * After `failureThreshold` consecutive unhealthy answers (no answer, timeout, 5xx,
 * non-OSRM body) calls are skipped for `coolDownMs`, so a dead server costs one timeout
 * per cool-down instead of one per request. Then a single probe is let through: success
 * closes the circuit, failure opens it for another cool-down.
 */
export function createOsrmClient(options: OsrmClientOptions): OsrmClient {
  const baseUrl = checkedBaseUrl(options.baseUrl, 'OSRM');
  const profile = options.profile ?? DEFAULT_OSRM_PROFILE;
  if (!/^[A-Za-z0-9_-]+$/.test(profile)) throw new RangeError(`bad OSRM profile: ${profile}`);
  const timeoutMs = checkedCount(options.timeoutMs, 'timeoutMs', 1);
  const threshold = checkedCount(
    options.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD,
    'failureThreshold',
    1,
  );
  const coolDownMs = checkedCount(options.coolDownMs ?? DEFAULT_COOL_DOWN_MS, 'coolDownMs', 0);
  const now = options.now ?? Date.now;

  let consecutiveFailures = 0;
  let openUntil = 0;
  let probeInFlight = false;

  function fail(reason: string): null {
    try {
      options.onFailure?.(reason);
    } catch {
      // A broken logger must not turn a fallback into an error.
    }
    return null;
  }

  async function query(origin: GeoPoint, destination: GeoPoint): Promise<Outcome> {
    const url =
      `${baseUrl}/route/v1/${profile}/${coordinate(origin)};${coordinate(destination)}` +
      '?overview=false&alternatives=false&steps=false';
    try {
      // The signal also bounds reading the body, not only the headers.
      const response = await fetch(url, {
        signal: AbortSignal.timeout(timeoutMs),
        headers: { accept: 'application/json' },
      });
      return readAnswer(response.status, await response.text());
    } catch (err) {
      return unhealthy(describeFetchError(err, timeoutMs));
    }
  }

  return {
    async roadDistanceKm(origin, destination) {
      if (!isGeoPoint(origin) || !isGeoPoint(destination)) {
        return fail('invalid coordinates: lat must be in [-90, 90] and lon in [-180, 180]');
      }
      const open = consecutiveFailures >= threshold;
      if (open && (now() < openUntil || probeInFlight)) {
        return fail(`circuit open after ${consecutiveFailures} consecutive failures`);
      }

      if (open) probeInFlight = true;
      let outcome: Outcome;
      try {
        outcome = await query(origin, destination);
      } finally {
        if (open) probeInFlight = false;
      }

      if (outcome.ok) {
        consecutiveFailures = 0;
        return outcome.km;
      }
      if (!outcome.unhealthy) {
        // The server answered properly: it is alive, whatever the route.
        consecutiveFailures = 0;
        return fail(outcome.reason);
      }
      consecutiveFailures += 1;
      if (consecutiveFailures < threshold) return fail(outcome.reason);
      openUntil = now() + coolDownMs;
      return fail(
        `${outcome.reason}; circuit open for ${coolDownMs} ms after ${consecutiveFailures} consecutive failures`,
      );
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

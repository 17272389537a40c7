import { fetchOutbound } from '../../libs/outbound-fetch';

/**
 * The clients of external servers (OSRM, a Nominatim-compatible geocoder) share one way of
 * calling them: a GET through libs/outbound-fetch.ts (a deadline, an answer read up to a byte
 * cap, no redirect followed), a circuit breaker, and every failure reported and answered as
 * "no answer".
 */

/**
 * Real answers are under 2 KB: an OSRM route without overview, steps or alternatives (two
 * waypoints with their hints and street names), a Nominatim place with `limit=1`. 64 KiB
 * leaves a wide margin and still bounds what a misbehaving server makes us hold.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024;
export const DEFAULT_FAILURE_THRESHOLD = 5;
export const DEFAULT_COOL_DOWN_MS = 30_000;

/** An http(s) root without query or fragment, trailing slashes removed; throws RangeError. */
export function checkedBaseUrl(baseUrl: string, what: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new RangeError(`${what} base URL is not a URL: ${baseUrl}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new RangeError(`${what} base URL must be http or https: ${baseUrl}`);
  }
  if (url.search || url.hash) {
    throw new RangeError(`${what} base URL must not have a query or fragment: ${baseUrl}`);
  }
  return url.href.replace(/\/+$/, '');
}

export function checkedCount(value: number, what: string, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(`${what} must be an integer >= ${min}, got ${value}`);
  }
  return value;
}

/**
 * What one answer said: a value, or why there is none. `unhealthy` failures (no answer,
 * timeout, a server error, a body no such server sends) count towards the circuit breaker;
 * the others are real answers from a live server.
 */
export type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string; unhealthy: boolean };

export const unhealthy = (reason: string): Outcome<never> => ({
  ok: false,
  reason,
  unhealthy: true,
});

export interface UpstreamOptions {
  /** Server root, path prefix allowed: `http://127.0.0.1:5000`, `https://maps.example/osrm`. */
  baseUrl: string;
  /** Budget of one whole call, body included. */
  timeoutMs: number;
  /** Largest answer read; a larger one is an unhealthy answer. */
  maxAnswerBytes?: number;
  /** Consecutive unhealthy answers that open the circuit. */
  failureThreshold?: number;
  /** How long an open circuit skips calls before one probe is let through. */
  coolDownMs?: number;
  /** Milliseconds clock; injected by tests. */
  now?: () => number;
  /**
   * Called with why for every failed call made, and for the opening of the circuit; not for
   * each call the open circuit skips (at a few thousand quotes a second, a line each would
   * bury the outage's cause), which the next report counts instead. The service logs it.
   */
  onFailure?: (reason: string) => void;
}

export interface Upstream {
  /**
   * GETs `path` under the base URL and reads the answer with `read`. Never throws: a failure
   * is reported through `onFailure` (a call the open circuit skips is counted, not reported)
   * and returned.
   */
  get<T>(
    path: string,
    headers: Record<string, string>,
    read: (status: number, text: string) => Outcome<T>,
  ): Promise<Outcome<T>>;
  /** Reports a failure found without calling the server (bad input); answers null. */
  fail(reason: string): null;
}

/**
 * One external server. After `failureThreshold` consecutive unhealthy answers calls are
 * skipped for `coolDownMs`, so a dead server costs one timeout per cool-down instead of one
 * per request. Then a single probe is let through: success closes the circuit, failure opens
 * it for another cool-down. Throws at creation on bad options (a configuration error).
 */
export function createUpstream(what: string, options: UpstreamOptions): Upstream {
  const baseUrl = checkedBaseUrl(options.baseUrl, what);
  const timeoutMs = checkedCount(options.timeoutMs, 'timeoutMs', 1);
  const maxBytes = checkedCount(
    options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    'maxAnswerBytes',
    1,
  );
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
  /** Calls the open circuit skipped since the last report. */
  let skipped = 0;

  function fail(reason: string): null {
    try {
      options.onFailure?.(reason);
    } catch {
      // A broken logger must not turn a fallback into an error.
    }
    return null;
  }

  function failed<T>(outcome: Outcome<T>, reason: string): Outcome<T> {
    const skips = skipped > 0 ? `; ${skipped} call${skipped === 1 ? '' : 's'} skipped before` : '';
    skipped = 0;
    fail(`${reason}${skips}`);
    return outcome;
  }

  return {
    fail,
    async get<T>(
      path: string,
      headers: Record<string, string>,
      read: (status: number, text: string) => Outcome<T>,
    ): Promise<Outcome<T>> {
      const open = consecutiveFailures >= threshold;
      if (open && (now() < openUntil || probeInFlight)) {
        skipped += 1;
        const reason = `circuit open after ${consecutiveFailures} consecutive failures`;
        return { ok: false, reason, unhealthy: false };
      }

      if (open) probeInFlight = true;
      let outcome: Outcome<T>;
      try {
        const answer = await fetchOutbound(`${baseUrl}${path}`, {
          headers,
          timeoutMs,
          maxAnswerBytes: maxBytes,
        });
        outcome = answer.ok ? read(answer.status, answer.text) : unhealthy(answer.reason);
      } finally {
        if (open) probeInFlight = false;
      }

      if (outcome.ok || !outcome.unhealthy) {
        // The server answered properly: it is alive, whatever the answer.
        consecutiveFailures = 0;
        if (!outcome.ok) return failed(outcome, outcome.reason);
        skipped = 0;
        return outcome;
      }
      consecutiveFailures += 1;
      if (consecutiveFailures < threshold) return failed(outcome, outcome.reason);
      openUntil = now() + coolDownMs;
      return failed(
        outcome,
        `${outcome.reason}; circuit open for ${coolDownMs} ms after ${consecutiveFailures} consecutive failures`,
      );
    },
  };
}

import { isGeoPoint, type GeoPoint } from './distance';
import { checkedBaseUrl, describeFetchError, isRecord, quoted } from './upstream';

/** Street-level text geocoding from an external server; null when it has no answer. */
export interface TextGeocoder {
  geocode(text: string): Promise<GeoPoint | null>;
}

export interface NominatimOptions {
  /** Server root: `https://nominatim.openstreetmap.org` or a self-hosted one. */
  baseUrl: string;
  timeoutMs: number;
  /** Nominatim's usage policy asks every client to name itself. */
  userAgent: string;
  /** Bias to these ISO alpha-2 countries, e.g. `ng`. */
  countryCodes?: string;
  /** Called with why a lookup gave nothing; the service logs it. */
  onFailure?: (reason: string) => void;
}

/**
 * A Nominatim-compatible `/search` client. It never throws after creation: any failure
 * (timeout, HTTP error, odd answer) is reported and answered with null, so the offline
 * gazetteer takes over.
 */
export function createNominatimGeocoder(options: NominatimOptions): TextGeocoder {
  const baseUrl = checkedBaseUrl(options.baseUrl, 'Geocoder');
  const fail = (reason: string): null => {
    try {
      options.onFailure?.(reason);
    } catch {
      // A broken logger must not turn a fallback into an error.
    }
    return null;
  };

  return {
    async geocode(text) {
      const params = new URLSearchParams({ q: text, format: 'jsonv2', limit: '1' });
      if (options.countryCodes) params.set('countrycodes', options.countryCodes);
      let status: number;
      let body: string;
      try {
        const response = await fetch(`${baseUrl}/search?${params}`, {
          signal: AbortSignal.timeout(options.timeoutMs),
          headers: { accept: 'application/json', 'user-agent': options.userAgent },
        });
        status = response.status;
        body = await response.text();
      } catch (err) {
        return fail(describeFetchError(err, options.timeoutMs));
      }
      if (status < 200 || status > 299) return fail(`HTTP ${status}${quoted(body)}`);
      let results: unknown;
      try {
        results = JSON.parse(body);
      } catch {
        return fail(`answer is not JSON${quoted(body)}`);
      }
      if (!Array.isArray(results)) return fail('answer is not a list of places');
      const first: unknown = results[0];
      if (first === undefined) return null; // no match: not a failure
      const point = isRecord(first) ? { lat: Number(first.lat), lon: Number(first.lon) } : null;
      if (!point || !isGeoPoint(point)) return fail('first place has no valid lat/lon');
      return point;
    },
  };
}

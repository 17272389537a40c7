/** Helpers shared by the clients of external servers (OSRM, Nominatim). */

/** Longest server message quoted in a failure reason, so one bad answer cannot flood a log. */
const MAX_QUOTED_CHARS = 200;

export function quote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > MAX_QUOTED_CHARS ? `${flat.slice(0, MAX_QUOTED_CHARS)}...` : flat;
}

/** `: <quoted text>`, or nothing for an empty body. */
export const quoted = (text: string): string => (text.trim() ? `: ${quote(text)}` : '');

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * fetch hides the socket error (ECONNREFUSED, ENOTFOUND...) in `cause`. Duck-typed, not
 * `instanceof`: fetch's errors and DOMException may come from another realm (jest's vm).
 */
export function describeFetchError(err: unknown, timeoutMs: number): string {
  if (!isRecord(err)) return `request failed: ${String(err)}`;
  if (err.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  const cause = err.cause;
  if (isRecord(cause) && typeof cause.code === 'string') return `request failed: ${cause.code}`;
  return `request failed: ${typeof err.message === 'string' ? err.message : String(err)}`;
}

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

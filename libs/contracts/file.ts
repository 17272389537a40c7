import { randomUUID } from 'node:crypto';
import { escapeRegExp } from '../text';

/**
 * What other services may know of the file service: the one rule of hosted-file URLs.
 *
 * Hosted files live at `<CDN_BASE_URL>/<key>`, keys being `uploads/<userId>/<uuid>.<ext>`:
 * grouped by the uploading user, unguessable, with an extension that matches the content.
 * The file service serves downloads by it and packages accept `image` URLs by it, so a URL is
 * hosted for both or for neither.
 */
export const KEY_PREFIX = 'uploads';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const EXT = '[a-z0-9]{1,8}';
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}/${UUID}/${UUID}\\.${EXT}$`);
const UUID_PATTERN = new RegExp(`^${UUID}$`);
const EXT_PATTERN = new RegExp(`^${EXT}$`);

/**
 * Longest URL stored where a hosted file may be named: a package's `image`, a courier's
 * `profilePhoto`. CDN_BASE_URL is bounded so that every key the file service makes fits it.
 */
export const HOSTED_URL_MAX = 512;
/** Longest extension of a key the file service makes (`jpeg`, `jfif`, `webp`, …). */
export const NEW_FILE_EXTENSION_MAX = 4;
/** The longest key the file service makes: a key's layout and its longest extension. */
export const LONGEST_NEW_FILE_KEY = `${KEY_PREFIX}/${'f'.repeat(8)}-ffff-4fff-bfff-${'f'.repeat(12)}/${'f'.repeat(8)}-ffff-4fff-bfff-${'f'.repeat(12)}.${'z'.repeat(NEW_FILE_EXTENSION_MAX)}`;

/**
 * Seconds an upload or download refused for load is told to wait (`Retry-After`): by the
 * gateway when the key has as many in progress as it may, by the file service when it is
 * full. Files of a few megabytes take seconds, so a slot is likely free by then.
 */
export const FILE_RETRY_AFTER_SECONDS = 5;

/**
 * An account's share of the file allowances (uploads and downloads under way, the bytes of a
 * day): its server keys' or, apart, its publishable keys' (decision 158). A publishable key is
 * shipped inside apps and pages, so anyone's: what it takes must not be what the merchant's own
 * servers upload and download with.
 */
export interface AllowanceShare {
  userId: string;
  publishable: boolean;
}

export const allowanceShareOf = (
  userId: string,
  meta: { publishableKey?: boolean },
): AllowanceShare => ({ userId, publishable: meta.publishableKey === true });

/** The share as counters name it: the user's id, and `:publishable` after it for that share. */
export const shareCounter = ({ userId, publishable }: AllowanceShare) =>
  publishable ? `${userId}:publishable` : userId;

/** Who holds the share and what they hold, as a 429 says it. */
export const shareHolderHas = ({ publishable }: AllowanceShare) =>
  publishable ? "This account's publishable keys already have" : 'This account already has';

/** Longest URL we look at; ours are about 120 characters plus the base. */
export const MAX_URL_LENGTH = 2048;

export const isFileKey = (key: string) => KEY_PATTERN.test(key);

/** A new key for a file of `userId` with extension `ext` (lower-case letters and digits). */
export function newFileKey(userId: string, ext: string, id: string = randomUUID()): string {
  if (!UUID_PATTERN.test(userId)) throw new Error(`file keys need a user UUID, got ${userId}`);
  if (!EXT_PATTERN.test(ext) || ext.length > NEW_FILE_EXTENSION_MAX) {
    throw new Error(`bad file extension ${ext}`);
  }
  const key = `${userFolder(userId)}${id}.${ext}`;
  if (!isFileKey(key)) throw new Error(`bad file id ${id}`);
  return key;
}

/** `scheme://host[:port][/base/path]` of CDN_BASE_URL in canonical form, no trailing slash. */
function canonicalBase(cdnBaseUrl: string): { origin: string; basePath: string; scheme: string } {
  const base = new URL(cdnBaseUrl);
  return {
    origin: `${base.protocol}//${base.host}`,
    basePath: base.pathname.replace(/\/+$/, ''),
    scheme: base.protocol,
  };
}

/** The public URL of a stored file. */
export function hostedUrl(key: string, cdnBaseUrl: string): string {
  if (!isFileKey(key)) throw new Error(`not a file key: ${key}`);
  const { origin, basePath } = canonicalBase(cdnBaseUrl);
  return `${origin}${basePath}/${key}`;
}

/** Longest CDN_BASE_URL: `/` and the longest key after it make a URL of `HOSTED_URL_MAX`. */
export const CDN_BASE_URL_MAX = HOSTED_URL_MAX - 1 - LONGEST_NEW_FILE_KEY.length;

/**
 * Whether every key the file service makes has a URL under this base that may be stored
 * (`HOSTED_URL_MAX`): measured on the canonical base, which is the one URLs are made of.
 */
export const hostsEveryNewKey = (cdnBaseUrl: string) =>
  hostedUrl(LONGEST_NEW_FILE_KEY, cdnBaseUrl).length <= HOSTED_URL_MAX;

export type ParsedHostedUrl = { ok: true; key: string } | { ok: false; reason: string };

const refuse = (reason: string): ParsedHostedUrl => ({ ok: false, reason });

/**
 * The object key behind a hosted URL, or why the URL is not one of ours. The check is on
 * the text itself, never on a normalised form: the URL must begin with CDN_BASE_URL exactly
 * (scheme, host, port, base path; no user info, no other spelling of the host), then name a
 * key of our layout in plain characters. Anything a URL parser or a server could read
 * differently (percent-encoding, dot segments, backslashes, doubled slashes, queries,
 * fragments, non-ASCII look-alikes) is refused rather than interpreted.
 */
export function parseHostedUrl(url: unknown, cdnBaseUrl: string): ParsedHostedUrl {
  if (typeof url !== 'string' || url.length === 0) return refuse('url must be a non-empty string');
  if (url.length > MAX_URL_LENGTH) return refuse(`url is longer than ${MAX_URL_LENGTH} characters`);
  if (/[^\x21-\x7e]/.test(url)) {
    return refuse('url contains spaces, control characters or non-ASCII characters');
  }
  if (url.includes('\\')) return refuse('url contains a backslash');

  const { origin, basePath, scheme } = canonicalBase(cdnBaseUrl);
  const host = origin.slice(scheme.length + 2);
  if (!url.startsWith(`${scheme}//`))
    return refuse(`only ${scheme}//${host}/ URLs are hosted files`);
  const afterScheme = url.slice(scheme.length + 2);
  const authorityEnd = afterScheme.search(/[/?#]/);
  const authority = authorityEnd < 0 ? afterScheme : afterScheme.slice(0, authorityEnd);
  if (authority !== host) return refuse(`host must be exactly ${host}`);

  const path = authorityEnd < 0 ? '' : afterScheme.slice(authorityEnd);
  if (path === '' || path === '/') return refuse('url names no file');
  if (/[?#]/.test(path)) return refuse('url must not have a query string or fragment');
  if (path.includes('%')) return refuse('url must not contain percent-encoded characters');
  if (!path.startsWith(`${basePath}/`)) return refuse(`path must start with ${basePath}/`);

  const key = path.slice(basePath.length + 1);
  const segments = key.split('/');
  if (segments.some((s) => s === '.' || s === '..'))
    return refuse('url must not contain . or .. segments');
  if (segments.some((s) => s === '')) return refuse('url must not contain empty path segments');
  if (segments.some((s) => !/^[A-Za-z0-9._-]+$/.test(s))) {
    return refuse('url path contains characters a hosted file never has');
  }
  if (!isFileKey(key)) return refuse(`not a hosted file path (${KEY_PREFIX}/<user>/<file>.<ext>)`);

  // Belt and braces: a WHATWG parser must read the same URL back, character for character.
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse('url is not a valid URL');
  }
  if (parsed.href !== url || parsed.pathname !== `${basePath}/${key}`) {
    return refuse('url is not in canonical form');
  }
  return { ok: true, key };
}

/** The last segment of a key: the file name offered on download. */
export const fileNameOf = (key: string) => key.slice(key.lastIndexOf('/') + 1);

/** A stored file's name, the last segment of its URL (`<uuid>.<ext>`), as a pattern. */
export const FILE_NAME_PATTERN = `^${UUID}\\.${EXT}$`;

/** Where a user's files are kept: the folder of their keys, with its trailing slash. */
export const userFolder = (userId: string) => `${KEY_PREFIX}/${userId}/`;

/** Whose file a key is, and its name in their folder. */
export function ownerOfKey(key: string): { userId: string; fileName: string } {
  if (!isFileKey(key)) throw new Error(`not a file key: ${key}`);
  const [, userId, fileName] = key.split('/');
  return { userId, fileName };
}

/**
 * The hosted URLs of a CDN base as a regular expression, for the OpenAPI document: exactly
 * the URLs `parseHostedUrl` accepts.
 */
export function hostedUrlPattern(cdnBaseUrl: string): string {
  const { origin, basePath } = canonicalBase(cdnBaseUrl);
  return `^${escapeRegExp(`${origin}${basePath}/${KEY_PREFIX}/`)}${UUID}/${UUID}\\.${EXT}$`;
}

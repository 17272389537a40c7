import { validationError } from './errors';

/**
 * Every reply between services crosses NATS in one message, 1 MB by default (decision 33); a
 * larger one is dropped, and its caller waits out its timeout for a 504.
 */
export const NATS_MESSAGE_BYTES = 1024 * 1024;
/** What a reply carries besides its data: ids, the caller's meta, the envelope. */
export const REPLY_OVERHEAD_BYTES = 64 * 1024;
/** The most a reply's data may be in JSON. */
export const REPLY_DATA_BYTES = NATS_MESSAGE_BYTES - REPLY_OVERHEAD_BYTES;

/** How many of `items`, from the first, make at most `budget` bytes as one JSON array. */
export function leadingItemsThatFit(items: readonly unknown[], budget = REPLY_DATA_BYTES): number {
  let size = '[]'.length;
  for (let i = 0; i < items.length; i += 1) {
    size += Buffer.byteLength(JSON.stringify(items[i])) + (i > 0 ? ','.length : 0);
    if (size > budget) return i;
  }
  return items.length;
}

/**
 * `page` when it fits in one reply, else a 400 on `limit` naming the largest limit that does
 * (from the same offset): a page of items as large as validation lets them be would otherwise
 * never arrive. Pages of at most `alwaysFit` items (which a unit test proves fit however large
 * each is) are not measured.
 */
export function pageInOneReply<T>(page: T[], alwaysFit: number, items: string): T[] {
  if (page.length <= alwaysFit) return page;
  // At least one: only items stored under older limits could each outgrow a reply.
  const fit = Math.max(leadingItemsThatFit(page), 1);
  if (fit === page.length) return page;
  const message = `these ${page.length} ${items} are too large to answer at once; ask for them with limit=${fit} or less`;
  throw validationError([{ field: 'limit', message }], `limit: ${message}`);
}

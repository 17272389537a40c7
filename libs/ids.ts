import { createHash } from 'node:crypto';

/** Namespace of Waybill's name-based ids (RFC 9562 version 5). */
const WAYBILL_NAMESPACE = Buffer.from('6f1d7c2a8b3e4f5a9c0d1e2f3a4b5c6d', 'hex');

/**
 * The same UUID for the same name, always: a record created for an `Idempotency-Key` gets
 * the id of that key, so a repeated insert collides on `_id` instead of creating a twin.
 */
export function nameBasedId(...parts: string[]): string {
  const name = Buffer.from(parts.map((p) => `${p.length}:${p}`).join(''), 'utf8');
  const bytes = createHash('sha1').update(WAYBILL_NAMESPACE).update(name).digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x50; // version 5
  bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC variant
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The name of the `turn`-th claim of work named `name`: `name` itself first, then
 * `<name>~<turn>` for each caller taking over from one that stopped while it held the last.
 */
export const turnName = (name: string, turn: number) => (turn === 0 ? name : `${name}~${turn}`);

import { hash } from 'node:crypto';

/**
 * Namespace of every gazetteer id. Never change it: ids are stored on addresses and
 * deliveries, and they stay the same across processes only because this is fixed.
 */
export const GAZETTEER_NAMESPACE = 'e30f9063-fd4a-4b28-91bd-dae2092051d1';

const namespaceBytes = uuidBytes(GAZETTEER_NAMESPACE);

function uuidBytes(uuid: string): Buffer {
  return Buffer.from(uuid.replaceAll('-', ''), 'hex');
}

/** Namespace bytes followed by the name, reused: one-shot hashing of a buffer is the fast path. */
let scratch = Buffer.alloc(256);

/** RFC 9562 UUID version 5: SHA-1 of namespace and name, so the same name gives the same id. */
export function uuidV5(name: string, namespace?: string): string {
  const ns = namespace === undefined ? namespaceBytes : uuidBytes(namespace);
  const size = ns.length + Buffer.byteLength(name, 'utf8');
  if (scratch.length < size) scratch = Buffer.alloc(size * 2);
  ns.copy(scratch);
  scratch.write(name, ns.length, 'utf8');
  const hex = hash('sha1', scratch.subarray(0, size), 'hex');
  // Version 5 in the high nibble of byte 6, variant 10xx in the high bits of byte 8.
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** A state's id, from its GeoNames admin-1 code ("NG.05"). */
export function admin1Uuid(code: string): string {
  return uuidV5(`admin1:${code}`);
}

/** An LGA's or district's id, from its GeoNames admin-2 code ("NG.05.25011"). */
export function admin2Uuid(code: string): string {
  return uuidV5(`admin2:${code}`);
}

/**
 * A city's id, from its country, name and coordinates: no two GeoNames rows share all four,
 * and leaving the admin codes out keeps ids stable when GeoNames re-codes a division.
 * Numbers print as the shortest string that reads back to them (ECMAScript's rule), the
 * same on every machine.
 */
export function cityUuid(countryCode: string, name: string, lat: number, lon: number): string {
  return uuidV5(`city:${countryCode}|${name}|${lat}|${lon}`);
}

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
  const bytes = new Uint8Array(UUID_BYTES);
  uuidV5Bytes(name, bytes, 0, namespace);
  return formatUuid(bytes, 0);
}

const UUID_BYTES = 16;

/** Writes the 16 bytes of `uuidV5(name, namespace)` into `into` at `at`. */
function uuidV5Bytes(name: string, into: Uint8Array, at: number, namespace?: string): void {
  const ns = namespace === undefined ? namespaceBytes : uuidBytes(namespace);
  const size = ns.length + Buffer.byteLength(name, 'utf8');
  if (scratch.length < size) scratch = Buffer.alloc(size * 2);
  ns.copy(scratch);
  scratch.write(name, ns.length, 'utf8');
  const digest = hash('sha1', scratch.subarray(0, size), 'buffer');
  into.set(digest.subarray(0, UUID_BYTES), at);
  // Version 5 in the high nibble of byte 6, variant 10xx in the high bits of byte 8.
  into[at + 6] = (into[at + 6] & 0x0f) | 0x50;
  into[at + 8] = (into[at + 8] & 0x3f) | 0x80;
}

const HEX = '0123456789abcdef';
/** Reused for every id printed: the result is one flat string, not a tree of concatenations. */
const printed = Buffer.alloc(36);

function formatUuid(bytes: Uint8Array, at: number): string {
  let out = 0;
  for (let b = 0; b < UUID_BYTES; b++) {
    if (b === 4 || b === 6 || b === 8 || b === 10) printed[out++] = 0x2d; // '-'
    printed[out++] = HEX.charCodeAt(bytes[at + b] >> 4);
    printed[out++] = HEX.charCodeAt(bytes[at + b] & 0xf);
  }
  return printed.toString('latin1', 0, out);
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Index bits packed under an id's first 32 bits in `IdColumn`'s lookup keys (2^21 slots). */
const SLOT_BITS = 21;

/**
 * The version-5 ids of numbered things (cities, LGAs), kept as 16 bytes each and printed when
 * asked for. 171,000 id strings, or a Map from them, would be tens of megabytes of small heap
 * objects for the garbage collector to walk on every full collection; these are two typed
 * arrays. Ids are hashed when first set, so a caller can fill them lazily.
 */
export class IdColumn {
  private readonly bytes: Uint8Array;
  private readonly known: Uint8Array;
  /** first 32 bits * 2^SLOT_BITS + slot, sorted: built once every id is known. */
  private sorted: Float64Array | undefined;

  constructor(readonly size: number) {
    if (size > 2 ** SLOT_BITS) throw new Error(`IdColumn holds at most ${2 ** SLOT_BITS} ids`);
    this.bytes = new Uint8Array(size * UUID_BYTES);
    this.known = new Uint8Array(size);
  }

  has(slot: number): boolean {
    return this.known[slot] === 1;
  }

  /** Sets every slot not yet set, naming each with `nameOf`; once done, a no-op. */
  fillMissing(nameOf: (slot: number) => string): void {
    if (this.sorted) return;
    for (let slot = 0; slot < this.size; slot++) if (!this.has(slot)) this.set(slot, nameOf(slot));
    this.sorted = this.sortHeads();
  }

  /** Sets slot's id to `uuidV5(name)`. */
  set(slot: number, name: string): void {
    uuidV5Bytes(name, this.bytes, slot * UUID_BYTES);
    this.known[slot] = 1;
    this.sorted = undefined;
  }

  /** The id of a slot already set. */
  get(slot: number): string {
    return formatUuid(this.bytes, slot * UUID_BYTES);
  }

  /**
   * The slot whose id is this text (lower-case, as printed), or undefined. Every slot must be
   * set (`fillMissing`); the first call sorts them (a few milliseconds for 171,000).
   */
  lookup(uuid: string): number | undefined {
    if (!UUID_TEXT.test(uuid)) return undefined;
    const wanted = Buffer.from(uuid.replaceAll('-', ''), 'hex');
    const head = wanted.readUInt32BE(0);
    const sorted = (this.sorted ??= this.sortHeads());
    const scale = 2 ** SLOT_BITS;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (sorted[mid] < head * scale) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < sorted.length && Math.floor(sorted[k] / scale) === head; k++) {
      const slot = sorted[k] % scale;
      if (this.bytesEqual(slot, wanted)) return slot;
    }
    return undefined;
  }

  private sortHeads(): Float64Array {
    const keys = new Float64Array(this.size);
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    for (let slot = 0; slot < this.size; slot++) {
      if (!this.has(slot)) throw new Error(`IdColumn.lookup: slot ${slot} has no id yet`);
      keys[slot] = view.getUint32(slot * UUID_BYTES) * 2 ** SLOT_BITS + slot;
    }
    return keys.sort();
  }

  private bytesEqual(slot: number, wanted: Uint8Array): boolean {
    const at = slot * UUID_BYTES;
    for (let b = 0; b < UUID_BYTES; b++) if (this.bytes[at + b] !== wanted[b]) return false;
    return true;
  }
}

/** A state's id, from its GeoNames admin-1 code ("NG.05"). */
export function admin1Uuid(code: string): string {
  return uuidV5(`admin1:${code}`);
}

/** The name hashed into an LGA's or district's id: its GeoNames admin-2 code ("NG.05.25011"). */
export function admin2IdName(code: string): string {
  return `admin2:${code}`;
}

/**
 * The name hashed into a city's id: its country, name and coordinates: no two GeoNames rows share all four,
 * and leaving the admin codes out keeps ids stable when GeoNames re-codes a division.
 * Numbers print as the shortest string that reads back to them (ECMAScript's rule), the
 * same on every machine.
 */
export function cityIdName(countryCode: string, name: string, lat: number, lon: number): string {
  return `city:${countryCode}|${name}|${lat}|${lon}`;
}

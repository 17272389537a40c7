import {
  CourierRuleBook,
  ambiguousWith,
  areasOverlap,
  formatArea,
  matchRule,
  parseArea,
  toRuleView,
  type CourierRule,
} from '../../../services/pricing/courier-rules';

const courierId = '3f1c7a52-4c1e-4f8e-9d3a-2b6e8f0c1a11';
let n = 0;
function rule(partial: Partial<CourierRule>): CourierRule {
  n += 1;
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    courierId,
    capBy: 'LOCATION',
    countryCode: 'NG',
    from: { state: 'Lagos' },
    to: { state: 'Lagos' },
    withinKmRadius: null,
    isPerKg: false,
    amountKobo: 200_000,
    priority: 0,
    createdAt: new Date(1_700_000_000_000 + n),
    ...partial,
  };
}

const ikejaToLekki = {
  origin: { countryCode: 'NG', state: 'Lagos', lgaOrCity: 'Ikeja' },
  destination: { countryCode: 'NG', state: 'Lagos', lgaOrCity: 'Eti Osa' },
  distanceKm: 24,
};

describe('areas', () => {
  it('parses "state" and "LGA, state"', () => {
    expect(parseArea('Lagos')).toEqual({ state: 'Lagos' });
    expect(parseArea(' Ikeja , Lagos ')).toEqual({ lgaOrCity: 'Ikeja', state: 'Lagos' });
    expect(parseArea('a, b, c')).toBeNull();
    expect(parseArea(', Lagos')).toBeNull();
    expect(formatArea({ lgaOrCity: 'Ikeja', state: 'Lagos' })).toBe('Ikeja, Lagos');
  });

  it('overlap when one contains the other', () => {
    expect(areasOverlap({ state: 'Lagos' }, { state: 'lagos', lgaOrCity: 'Ikeja' })).toBe(true);
    expect(
      areasOverlap(
        { state: 'Lagos', lgaOrCity: 'Ikeja' },
        { state: 'Lagos', lgaOrCity: 'Eti-Osa' },
      ),
    ).toBe(false);
    expect(areasOverlap({ state: 'Lagos' }, { state: 'Ogun' })).toBe(false);
  });
});

describe('matching a rule to a trip', () => {
  it('matches by state or LGA, case- and punctuation-blind', () => {
    const r = rule({
      from: { state: 'LAGOS', lgaOrCity: 'ikeja' },
      to: { state: 'Lagos', lgaOrCity: 'Eti-Osa' },
    });
    expect(matchRule([r], ikejaToLekki)).toBe(r);
    expect(
      matchRule([r], { ...ikejaToLekki, origin: { ...ikejaToLekki.origin, lgaOrCity: 'Yaba' } }),
    ).toBeNull();
  });

  it('respects the radius', () => {
    const near = rule({ withinKmRadius: 10 });
    expect(matchRule([near], ikejaToLekki)).toBeNull();
    expect(matchRule([near], { ...ikejaToLekki, distanceKm: 10 })).toBe(near);
  });

  it('never matches across countries or the wrong way', () => {
    const r = rule({ to: { state: 'Ogun' } });
    expect(matchRule([r], ikejaToLekki)).toBeNull();
    expect(
      matchRule([rule({})], { ...ikejaToLekki, origin: { countryCode: 'GH', state: 'Lagos' } }),
    ).toBeNull();
  });

  it('picks the lowest priority, then the most specific, then the oldest', () => {
    const broad = rule({ priority: 0 });
    const specific = rule({ priority: 0, from: { state: 'Lagos', lgaOrCity: 'Ikeja' } });
    const first = rule({ priority: 1, withinKmRadius: 50 });
    expect(matchRule([first, broad, specific], ikejaToLekki)).toBe(specific);
    expect(matchRule([first, broad], ikejaToLekki)).toBe(broad);
    const twin = rule({ priority: 0 });
    expect(matchRule([twin, broad], ikejaToLekki)).toBe(broad);
  });

  it('shows the public view of a rule', () => {
    const r = rule({
      from: { state: 'Lagos', lgaOrCity: 'Ikeja' },
      isPerKg: true,
      withinKmRadius: 30,
    });
    expect(toRuleView(r)).toEqual({
      id: r.id,
      capBy: 'LOCATION',
      from: 'Ikeja, Lagos',
      to: 'Lagos',
      withinKmRadius: 30,
      isPerKg: true,
    });
  });
});

describe('ambiguous rules', () => {
  it('overlapping areas with the same priority are ambiguous; another priority is not', () => {
    const existing = rule({ from: { state: 'Lagos' } });
    const candidate = rule({ from: { state: 'Lagos', lgaOrCity: 'Ikeja' } });
    expect(ambiguousWith(candidate, [existing])).toEqual([existing]);
    expect(ambiguousWith({ ...candidate, priority: 1 }, [existing])).toEqual([]);
  });

  it('rules of other couriers or disjoint areas never clash, nor a rule with itself', () => {
    const existing = rule({});
    expect(ambiguousWith({ ...existing }, [existing])).toEqual([]);
    expect(ambiguousWith(rule({ courierId: 'other' }), [existing])).toEqual([]);
    expect(ambiguousWith(rule({ to: { state: 'Ogun' } }), [existing])).toEqual([]);
  });
});

describe('the rules kept in memory', () => {
  it("answer each courier's own rules, and none for a courier without any", () => {
    const mine = [rule({}), rule({ priority: 1 })];
    const theirs = rule({ courierId: 'e2b7c1d4-5f6a-4b8c-9d0e-1f2a3b4c5d6e' });
    const book = new CourierRuleBook([mine[0], theirs, mine[1]]);
    expect(book.of(courierId)).toEqual(mine);
    expect(book.of(theirs.courierId)).toEqual([theirs]);
    expect(book.of('0f9e8d7c-6b5a-4c3d-8e1f-2a3b4c5d6e7f')).toEqual([]);
  });
});

import type { TierIds } from '../../libs/contracts/pricing';
import {
  levelOf,
  mergeTariff,
  scopeKey,
  scopesOf,
  type Tariff,
  type TariffOverride,
  type TierLevel,
  type TierScope,
} from './tariff';
import { tariffProblems } from './tariff-schema';

/** One stored revision of a tier, as the book needs it. */
export interface TierRevision {
  id: string;
  scopeKey: string;
  revision: number;
  level: TierLevel;
  rates: Tariff | TariffOverride;
  deleted: boolean;
  scope: TierScope;
  label?: string | null;
  /**
   * The number of the change of its country's tiers that stored it (1, 2, ...): what lets two
   * changes of one country at once be told apart (tier-store `changeId`). None on revisions
   * stored before changes were numbered, and on the starting tariff.
   */
  change?: number | null;
}

export interface TariffChoice {
  tariff: Tariff;
  tierIds: TierIds;
  /** Which revision of each tier priced this: "NG@3/lagos@1/ikeja@2". */
  tariffVersion: string;
}

const TIER_ID_FIELD: Record<TierLevel, keyof TierIds> = {
  country: 'countryPricingId',
  state: 'statePricingId',
  city: 'cityPricingId',
};

/**
 * The current tiers, in memory: pricing reads them on every quote, so the pricing service
 * keeps one book per process and replaces it whenever a tier changes.
 */
export class TariffBook {
  private readonly current = new Map<string, TierRevision>();
  /** The latest change number of each country, over every revision (current or not). */
  private readonly changes = new Map<string, number>();

  /** From every stored revision; the highest revision of each scope is current. */
  constructor(revisions: Iterable<TierRevision>) {
    for (const revision of revisions) {
      const held = this.current.get(revision.scopeKey);
      if (!held || held.revision < revision.revision) this.current.set(revision.scopeKey, revision);
      const country = revision.scope.countryCode.toUpperCase();
      const change = Math.max(revision.change ?? 0, this.changes.get(country) ?? 0);
      this.changes.set(country, change);
    }
  }

  /** A book where `revision` is current too: to check a change before storing it. */
  with(revision: TierRevision): TariffBook {
    const book = new TariffBook([...this.current.values(), revision]);
    // Revisions no longer current may hold a country's latest change number.
    for (const [country, change] of this.changes) {
      book.changes.set(country, Math.max(change, book.changes.get(country) ?? 0));
    }
    return book;
  }

  /**
   * The number of the latest change of a country's tiers in this book (0 before the first):
   * a change made against this book is change `lastChange + 1`, and stores only if no other
   * change took that number meanwhile.
   */
  lastChange(countryCode: string): number {
    return this.changes.get(countryCode.toUpperCase()) ?? 0;
  }

  /** The scope and every scope with a live tier inside it (its states, their cities). */
  scopesUnder(scope: TierScope): TierScope[] {
    const key = scopeKey(scope);
    const inside = [...this.current.values()]
      .filter((t) => !t.deleted && t.scopeKey.startsWith(`${key}/`))
      .map((t) => t.scope);
    return [scope, ...inside];
  }

  /**
   * What is wrong with the merged tariff of the scope and of every scope under it, each problem
   * prefixed with the scope's key: what a change of that scope (a removal too) may break.
   */
  problemsUnder(scope: TierScope): string[] {
    return this.scopesUnder(scope).flatMap((s) => {
      const choice = this.choose({ countryCode: s.countryCode, state: s.state, lgaOrCity: s.city });
      if (!choice) return [];
      return tariffProblems(choice.tariff).map((p) => `${scopeKey(s)}: ${p}`);
    });
  }

  /** The current revision of a scope, deleted or not. */
  latest(scope: TierScope): TierRevision | undefined {
    return this.current.get(scopeKey(scope));
  }

  /** The merged tariff for a trip from `origin`; null when no country tier covers it. */
  choose(origin: {
    countryCode?: string;
    state?: string;
    lgaOrCity?: string;
  }): TariffChoice | null {
    const tiers = scopesOf(origin)
      .map((scope) => ({ scope, tier: this.current.get(scopeKey(scope)) }))
      .filter(({ tier }) => tier !== undefined && !tier.deleted) as {
      scope: TierScope;
      tier: TierRevision;
    }[];
    const [country, ...overrides] = tiers;
    if (!country || levelOf(country.scope) !== 'country') return null;
    const tierIds: TierIds = { countryPricingId: null, statePricingId: null, cityPricingId: null };
    for (const { tier } of tiers) tierIds[TIER_ID_FIELD[tier.level]] = tier.id;
    return {
      tariff: mergeTariff(country.tier.rates as Tariff, ...overrides.map(({ tier }) => tier.rates)),
      tierIds,
      tariffVersion: tiers
        .map(({ tier }) => `${tier.scopeKey.split('/').at(-1)}@${tier.revision}`)
        .join('/'),
    };
  }

  /** Country codes with a tariff, for error messages. */
  countries(): string[] {
    return [...this.current.values()]
      .filter((t) => t.level === 'country' && !t.deleted)
      .map((t) => t.scopeKey)
      .sort();
  }
}

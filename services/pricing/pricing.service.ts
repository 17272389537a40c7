import Joi from '../../libs/joi';
import { CachedValue, ReloadedValue } from '../../libs/cache';
import type { Config } from '../../libs/config';
import { call } from '../../libs/contracts';
import { FLEET_TYPES_CHANGED_EVENT } from '../../libs/contracts/geo';
import { COURIER_RULES_CHANGED_EVENT, TARIFF_CHANGED_EVENT } from '../../libs/contracts/pricing';
import { ServiceDatabase } from '../../libs/mongo';
import { action, implement, type ServiceDefinition, type WaybillContext } from '../../libs/service';
import { Periodic } from '../../libs/periodic';
import { createCourierRuleActions } from './courier-rule-admin';
import { readCourierRuleBook } from './courier-rule-store';
import { CourierRuleBook } from './courier-rules';
import type { FleetOption } from './fleet-choice';
import { quote, quoteLoad, type QuoteSources } from './quote';
import { quoteLoadSchema, quoteRequestSchema, type QuoteRequestParams } from './quote-request';
import { modeAResponse, modeBResponse } from './schemas';
import { definePricingModels } from './store';
import { TariffBook } from './tariff-book';
import { createTierActions } from './tier-admin';
import { readBook, seedTiers } from './tier-store';

/** Fleet types change rarely and geo announces changes; this bounds a missed announcement. */
const FLEET_CACHE_MS = 30_000;
/** How recent a read of the fleet types answers a type asked for and not found in it. */
const FLEETS_READ_LATELY_MS = 1_000;
/** A lost `pricing.tariffChanged` or `pricing.courierRulesChanged` is repaired within this time. */
const BOOK_REFRESH_MS = 60_000;

export function createPricingService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'pricing', definePricingModels);
  // Reloaded by the timer, by announcements and by this replica's own changes, at once at times.
  const book = new ReloadedValue(() => readBook(db.models), new TariffBook([]));
  const courierRules = new ReloadedValue(
    () => readCourierRuleBook(db.models),
    new CourierRuleBook([]),
  );
  /** The minute's rereads; made in `started`, where the logger is. */
  let refreshes: Periodic[] = [];
  /** Geo owns the fleet types; made in `created`, when the broker exists. */
  let fleets: CachedValue<FleetOption[]>;

  async function reloadBook(): Promise<void> {
    await book.reload();
  }

  async function reloadCourierRules(): Promise<void> {
    await courierRules.reload();
  }

  const sources: QuoteSources = {
    book: () => book.current,
    fleets: () => fleets.get(),
    courierRules: async (courierId) => courierRules.current.of(courierId),
    fleetsReadLately: () => fleets.within(FLEETS_READ_LATELY_MS),
    fleetsReadSince: (ms) => fleets.since(ms),
    quotes: config.quotes,
  };

  return {
    name: 'pricing',
    mixins: [db.mixin()],
    created() {
      fleets = new CachedValue(
        () => call(this.broker, 'geo.listFleetTypes', { activeOnly: false }),
        FLEET_CACHE_MS,
        (err) =>
          this.logger.warn('Fleet types could not be read again; pricing with the last ones', {
            err,
          }),
      );
    },
    async started() {
      const models = await db.connect();
      await seedTiers(models);
      await Promise.all([reloadBook(), reloadCourierRules()]);
      const warn = (what: string) => (err: unknown) =>
        this.logger.warn(`Could not refresh ${what}; keeping the last`, { err });
      refreshes = [
        new Periodic(BOOK_REFRESH_MS, reloadBook, warn('the tariff')),
        new Periodic(BOOK_REFRESH_MS, reloadCourierRules, warn('the courier rules')),
      ];
      for (const refresh of refreshes) refresh.start();
    },
    async stopped() {
      await Promise.all(refreshes.map((refresh) => refresh.stop()));
    },
    events: {
      [TARIFF_CHANGED_EVENT]: reloadBook,
      [COURIER_RULES_CHANGED_EVENT]: reloadCourierRules,
      [FLEET_TYPES_CHANGED_EVENT]() {
        fleets.invalidate();
      },
    },
    actions: {
      price: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'POST',
          path: '/pricing',
          message: 'Delivery priced',
          summary: 'Price a delivery: by saved packages (Mode A) or by totals (Mode B)',
          description:
            'Mode A (`packagesId`) answers `deliveryCost`, `deliveryFee`, `matchingEligible` and `payOnDelivery`, its `deliveryCost.quoteId` naming this total for `POST /api/request` until `quoteExpiresAt`, and with courierSelection SPECIFIC the `courier` named; Mode B (`totalWeight` + `totalValue`) answers the cost alone. The same inputs and tariff always give the same amounts; `tierIds` and `tariffVersion` name the tariff revisions used. See docs/pricing.md for the formula.',
          response: Joi.alternatives().try(modeBResponse, modeAResponse).match('one'),
          errors: {
            404: 'Fleet type not found; Courier not found (Mode A, SPECIFIC: no active courier has that id)',
            422: 'The price is more than one payment can be (₦10 billion)',
          },
        },
        params: quoteRequestSchema,
        handler: (ctx) => quote(ctx as WaybillContext<QuoteRequestParams>, sources),
      }),

      /** Internal: a load a delivery took, priced as Mode A prices the same packages. */
      quote: implement('pricing.quote', {
        visibility: 'public',
        params: quoteLoadSchema,
        handler: (ctx) => quoteLoad(ctx, sources),
      }),
      ...createTierActions(db, { reload: reloadBook }),
      ...createCourierRuleActions(db, { reload: reloadCourierRules }),
    },
  };
}

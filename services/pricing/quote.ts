import { call, type Caller } from '../../libs/contracts';
import { MAX_AMOUNT_KOBO } from '../../libs/contracts/payment';
import {
  FLEET_TYPE_NOT_FOUND,
  NO_ACTIVE_FLEET_TYPE,
  type AddressInput,
  routeOf,
  type RouteParams,
  type Trip,
} from '../../libs/contracts/geo';
import type {
  PricedDelivery,
  PricedLoadParams,
  QuoteLoadParams,
  UrgencyType,
} from '../../libs/contracts/pricing';
import { badRequest, conflict, notFound, toHttpError, unprocessable } from '../../libs/errors';
import { neverStarted } from '../../libs/resilience';
import { formatKg, formatNaira, kgToGrams, nairaToKobo } from '../../libs/money';
import type { WaybillContext } from '../../libs/service';
import { matchRule, type CourierRule } from './courier-rules';
import { splitTotal } from './fee-blocks';
import { computeFees } from './fees';
import { chooseFleet, type FleetOption } from './fleet-choice';
import {
  readLoadSchedule,
  readQuoteRequest,
  type QuoteRequest,
  type QuoteRequestParams,
} from './quote-request';
import { heldRoute, readQuote, signQuote, type QuoteClaims } from './quote-token';
import { scheduleProblem, zonedInstant, type Schedule } from './schedule';
import type { TariffBook } from './tariff-book';
import { isNameable, nameableCourier } from '../../libs/contracts/nameable-courier';
import { toDeliveryCost, toModeAQuote, toQuotedCourier, type PricedTrip } from './views';

/** What a quote needs besides the request: the tariff, the fleet types, a courier's rules. */
export interface QuoteSources {
  book(): TariffBook;
  fleets(): Promise<FleetOption[]>;
  courierRules(courierId: string): Promise<readonly CourierRule[]>;
  /** The fleet types read within the last second, else read again (one read for all callers). */
  fleetsReadLately(): Promise<FleetOption[]>;
  /** The fleet types of a read begun at `ms` or after (one under way, or a new one). */
  fleetsReadSince(ms: number): Promise<FleetOption[]>;
  /** The key and lifetime of Mode A quotes' ids. */
  quotes: { secret: string; ttlMs: number };
}

/** A load to price between two places, its request already read. */
export interface LoadToPrice {
  origin: AddressInput;
  destination: AddressInput;
  load: PricedLoadParams;
  urgencyType: UrgencyType;
  schedule?: Schedule;
  fleetTypeId?: string;
  /** A SPECIFIC courier, whose own price applies where one of its rules matches. */
  courierId?: string;
  /** The request's field that declared the value: the insurance cap's 400 names it. */
  valueField: 'totalValue' | 'packagesId';
  /** The quote a request named: its distance holds, and its total must. */
  quoted?: QuoteClaims;
}

/**
 * The requested fleet type if it can carry the load, else the smallest active one that can.
 * An inactive one is not found, as an unknown one: it is listed nowhere an integrator can
 * see, and a price for another vehicle is not what was asked (decision 12 addendum).
 */
async function pickFleet(
  sources: QuoteSources,
  fleetTypeId: string | undefined,
  load: PricedLoadParams,
  read: () => Promise<FleetOption[]> = () => sources.fleets(),
) {
  let all = await read();
  const named = () => (fleetTypeId ? all.find((f) => f.id === fleetTypeId) : undefined);
  let requested = named();
  if (fleetTypeId && !requested?.active) {
    // Unknown or inactive as this replica remembers the types: another may have added it or
    // put it back, and its announcement not arrived here yet (geo decides on its database
    // too), so they are read again before a 404: once a second at most, however many ask.
    all = await sources.fleetsReadLately();
    requested = named();
    if (!requested?.active) throw notFound(FLEET_TYPE_NOT_FOUND);
  }
  const active = all.filter((f) => f.active);
  if (active.length === 0) throw notFound(FLEET_TYPE_NOT_FOUND, [NO_ACTIVE_FLEET_TYPE]);
  const fleet = chooseFleet(active, requested, load.weightGrams);
  if (!fleet) throw badRequest(`No active fleet type can carry ${formatKg(load.weightGrams)} kg`);
  return fleet;
}

/**
 * The trip between two addresses from geo. A geo of the version before, during a rolling
 * update, answers only `geo.route`: whether its road was measured is then not known.
 */
export async function tripOf(caller: Caller, params: RouteParams): Promise<Trip> {
  try {
    return await call(caller, 'geo.trip', params);
  } catch (err) {
    if (!neverStarted(err, 'geo.trip')) throw err;
    return { ...(await call(caller, 'geo.route', params)), roadMeasured: undefined };
  }
}

/**
 * Prices a load (docs/pricing.md): fleet choice, route, tariff, schedule and insurance checks,
 * courier rules, fees. Both Modes of `POST /api/pricing` and `pricing.quote` price through
 * this, so that the same inputs give the same amounts and the same errors everywhere.
 */
export async function priceLoad(
  caller: Caller,
  sources: QuoteSources,
  input: LoadToPrice,
): Promise<PricedTrip> {
  const { load, schedule } = input;
  let fleet = await pickFleet(sources, input.fleetTypeId, load);
  const routeFor = (fleetTypeId: string) =>
    tripOf(caller, { origin: input.origin, destination: input.destination, fleetTypeId });
  let resolved: Awaited<ReturnType<typeof routeFor>>;
  try {
    resolved = await routeFor(fleet.id);
  } catch (err) {
    // A type chosen here that geo no longer has (deactivated, and this replica not yet told):
    // the caller named none, so the types are read again, by a read begun after geo's answer
    // (however recent the one this replica has; one read for the callers told at once), and
    // the choice made once more.
    const { status, message } = toHttpError(err);
    if (input.fleetTypeId || status !== 404 || message !== FLEET_TYPE_NOT_FOUND) throw err;
    const refusedAt = Date.now();
    const refused = fleet.id;
    fleet = await pickFleet(sources, undefined, load, async () => {
      // Read again already (by another quote told before this one): that read serves.
      const kept = await sources.fleets();
      const stillActive = kept.some((f) => f.id === refused && f.active);
      return stillActive ? sources.fleetsReadSince(refusedAt) : kept;
    });
    resolved = await routeFor(fleet.id);
  }
  const route = input.quoted ? heldRoute(resolved, fleet.id, input.quoted) : routeOf(resolved);

  const book = sources.book();
  const choice = book.choose(route.origin);
  if (!choice) {
    throw badRequest(
      `No tariff covers deliveries from ${route.origin.country}; deliveries can start in: ${book.countries().join(', ') || 'nowhere yet (an operator must add a country tariff)'}`,
      [{ field: 'origin', message: 'outside the areas this service prices' }],
    );
  }
  const { tariff } = choice;
  if (schedule) {
    const problem = scheduleProblem(
      schedule.date,
      schedule.slot,
      new Date(),
      tariff.timezone,
      route.distance.etaSeconds,
    );
    if (problem) throw badRequest(problem.message, [problem]);
  }
  if (load.valueKobo > tariff.insurance.maxDeclaredValueKobo) {
    const cap = formatNaira(tariff.insurance.maxDeclaredValueKobo);
    throw badRequest(`The declared value is above the insurable maximum of ${cap} NGN`, [
      {
        field: input.valueField,
        message: `at most ${cap}; split the goods over several deliveries`,
      },
    ]);
  }

  const rules = input.courierId ? await sources.courierRules(input.courierId) : [];
  const rule = matchRule(rules, { ...route, distanceKm: route.distance.distanceKm });
  const fees = computeFees(
    {
      distanceKm: route.distance.distanceKm,
      routeType: route.routeType,
      weightGrams: load.weightGrams,
      valueKobo: load.valueKobo,
      fleetCode: fleet.code,
      urgency: input.urgencyType,
      slot: schedule?.slot,
      courierRate: rule ? { amountKobo: rule.amountKobo, isPerKg: rule.isPerKg } : undefined,
    },
    tariff,
  );
  // Only rates set past all sense price this high (a courier's rule or a tariff's rates of up
  // to ₦10 billion a kg or km): no payment could take it, and past 2^53 kobo sums lose kobo.
  if (fees.total > MAX_AMOUNT_KOBO) {
    throw unprocessable(
      `This delivery would cost more than one payment can be (${formatNaira(MAX_AMOUNT_KOBO)} NGN); split the load over several deliveries, or choose another courier`,
    );
  }
  if (input.quoted && fees.total !== input.quoted.totalKobo) {
    throw conflict(
      `This delivery now costs ${formatNaira(fees.total)} NGN, not the ${formatNaira(input.quoted.totalKobo)} NGN of its quote (the packages, the tariff or the route changed): ${PRICE_AGAIN}`,
    );
  }
  return { route, choice, fees, load, rule, fleet };
}

const PRICE_AGAIN =
  'price it again with POST /api/pricing and send the quoteId it answers (under a new Idempotency-Key if you sent one)';

/**
 * The quote a request names, read for the requester: 400 for an id we did not sign or signed
 * for another account, 409 for one past its time (a new quote fixes it).
 */
function quotedFor(sources: QuoteSources, quoteId: string, userId: string | undefined) {
  // Only a caller's own request names a quote: an internal call without one is a mistake.
  if (!userId) throw badRequest('quoteId is read for the requesting account, and none was sent');
  const { secret, ttlMs } = sources.quotes;
  const reading = readQuote(secret, quoteId, { userId, now: Date.now(), ttlMs });
  if (reading.ok) return reading.claims;
  if (reading.reason === 'expired') {
    const at = new Date(reading.expiresAt ?? 0).toISOString();
    throw conflict(`The quote expired at ${at}: ${PRICE_AGAIN}`);
  }
  if (reading.reason === 'outlived') {
    throw conflict(
      `The quote is held for longer than this service now holds quotes (${ttlMs / 1000} s): ${PRICE_AGAIN}`,
    );
  }
  const message =
    reading.reason === 'foreign'
      ? 'quoteId is a quote of another account'
      : 'quoteId is not a quote of this service (or was signed under a key since changed)';
  throw badRequest(`${message}: ${PRICE_AGAIN}`, [{ field: 'quoteId', message }]);
}

/** A Mode A answer's id: the price of this trip, held for the caller until it expires. */
function issuedQuote(sources: QuoteSources, userId: string, trip: PricedTrip) {
  const expiresAt = Date.now() + sources.quotes.ttlMs;
  const quoteId = signQuote(sources.quotes.secret, {
    userId,
    expiresAt,
    fleetTypeId: trip.fleet.id,
    origin: trip.route.origin,
    destination: trip.route.destination,
    distance: trip.route.distance,
    totalKobo: trip.fees.total,
  });
  return { quoteId, quoteExpiresAt: new Date(expiresAt).toISOString() };
}

/** Mode B states the totals; Mode A adds up the caller's saved packages. */
async function loadOf(
  caller: Caller,
  userId: string | undefined,
  request: QuoteRequest,
): Promise<PricedLoadParams> {
  if (request.pricing.mode === 'totals') {
    return {
      weightGrams: kgToGrams(request.pricing.totalWeight),
      valueKobo: nairaToKobo(request.pricing.totalValue),
    };
  }
  const selection = await call(caller, 'package.resolveSelection', {
    // readQuoteRequest refuses Mode A without a user.
    userId: userId as string,
    packageIds: request.pricing.packageIds,
  });
  return { weightGrams: selection.totalWeightGrams, valueKobo: selection.totalValueKobo };
}

/**
 * The courier a quote is priced for, and Mode A's `courier` (the specification's, when
 * SPECIFIC). Mode A refuses a courier no request may name (retired, the sandbox's) first, as
 * the request refuses it before its packages and price. Mode B names no courier and refuses
 * none: such a courier's rules are left out, as no request would be priced by them. It asks
 * the directory only when the courier has rules, and prices by them when the directory
 * cannot answer, as it did before it asked: a cost stays a pricing answer.
 */
export async function quotedCourier(
  ctx: Caller,
  sources: QuoteSources,
  courierId: string | undefined,
  totals: boolean,
) {
  if (!courierId) return {};
  if (!totals) {
    const named = await nameableCourier(ctx, courierId, 'courierId');
    return { courierId, courier: toQuotedCourier(named) };
  }
  if ((await sources.courierRules(courierId)).length === 0) return { courierId };
  const found = await call(ctx, 'courier-matching.getCourier', { courierId }).catch(
    (err: unknown) => {
      if (toHttpError(err).status < 500) throw err;
      return 'unknown' as const;
    },
  );
  return { courierId: found === 'unknown' || isNameable(found) ? courierId : undefined };
}

/** `POST /api/pricing`: Mode B answers the cost, Mode A the quote of the saved packages. */
export async function quote(ctx: WaybillContext<QuoteRequestParams>, sources: QuoteSources) {
  const params = ctx.params;
  const userId = ctx.meta.user?.id;
  const request = readQuoteRequest(params, Boolean(userId));
  const totals = request.pricing.mode === 'totals';
  const { courierId, courier } = await quotedCourier(ctx, sources, request.courierId, totals);
  const trip = await priceLoad(ctx, sources, {
    origin: params.origin,
    destination: params.destination,
    load: await loadOf(ctx, userId, request),
    urgencyType: params.urgencyType,
    schedule: request.schedule,
    fleetTypeId: params.fleetTypeId,
    courierId,
    valueField: totals ? 'totalValue' : 'packagesId',
  });
  if (totals) return toDeliveryCost(trip);
  const answer = toModeAQuote(trip, params);
  // In deliveryCost, where the other fields beyond the spec's are: `data`'s keys are the spec's.
  // readQuoteRequest refuses Mode A without a user.
  const held = issuedQuote(sources, userId as string, trip);
  return {
    ...answer,
    deliveryCost: { ...answer.deliveryCost, ...held },
    ...(courier ? { courier } : {}),
  };
}

/**
 * `pricing.quote`: a known load (the packages a delivery took) priced as Mode A prices the
 * same packages, with the amounts in kobo for the caller to charge.
 */
export async function quoteLoad(
  ctx: WaybillContext<QuoteLoadParams>,
  sources: QuoteSources,
): Promise<PricedDelivery> {
  const params = ctx.params;
  const schedule = readLoadSchedule(params);
  const { quoteId, ...load } = params;
  const quoted = quoteId ? quotedFor(sources, quoteId, ctx.meta.user?.id) : undefined;
  const trip = await priceLoad(ctx, sources, {
    ...load,
    schedule,
    valueField: 'packagesId',
    quoted,
  });
  const answer = toModeAQuote(trip, params);
  return {
    quote: answer,
    fees: trip.fees,
    shares: splitTotal(trip.fees.total, params.deliveryFeePayer),
    route: trip.route,
    fleetType: answer.deliveryCost.fleetType,
    tierIds: trip.choice.tierIds,
    tariffVersion: trip.choice.tariffVersion,
    slotStartsAt: slotInstant(schedule, 'start', trip.choice.tariff.timezone),
    slotEndsAt: slotInstant(schedule, 'end', trip.choice.tariff.timezone),
    timeZone: trip.choice.tariff.timezone,
  };
}

/** When a scheduled slot opens or closes in the tariff's zone (ISO); null without a schedule. */
function slotInstant(
  schedule: Schedule | undefined,
  edge: 'start' | 'end',
  timeZone: string,
): string | null {
  return schedule ? zonedInstant(schedule.date, schedule.slot[edge], timeZone).toISOString() : null;
}

/**
 * Service contracts: per service, what the others may know of it — action names with their
 * params, answers and whether a lost call may be repeated, event names with their payloads,
 * and the small pure helpers several services share. Services import each other only through
 * these files (an ESLint rule refuses `services/<a>` importing `services/<b>`), and call each
 * other through `call()`, which checks names, params and answers at compile time.
 */
import type { AccountActions, AccountEvents } from './account';
import type { GeoActions, GeoEvents } from './geo';
import type { OrderActions, OrderEvents } from './order';
import type { PackageActions } from './package';
import type { PaymentActions, PaymentEvents } from './payment';
import type { PricingActions, PricingEvents } from './pricing';
import type { MatchingActions, MatchingEvents } from './matching';
import type { WebhookActions } from './webhook';

export type Actions = AccountActions &
  GeoActions &
  MatchingActions &
  OrderActions &
  PackageActions &
  PaymentActions &
  PricingActions &
  WebhookActions;
export type ActionName = keyof Actions;

export type Events = AccountEvents &
  GeoEvents &
  MatchingEvents &
  OrderEvents &
  PaymentEvents &
  PricingEvents;
export type EventName = keyof Events;

export { call, broadcast, emit, type AnswerOf, type Caller, type ParamsOf } from './call';
export { CONTRACT_RETRY, retriesFor, SAFE_RETRIES, type Retry } from './retry';

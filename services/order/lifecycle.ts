/**
 * The delivery lifecycle: what a delivery's status and payment state may become on each
 * event, and what the order service must then do. Pure: no I/O, no clock; the order service
 * records what `transition` answers and carries out its effects. docs/deliveries.md
 * ("Statuses and transitions") shows the same table, checked against this one by a test.
 */

export const DELIVERY_STATUSES = [
  'REQUEST_CREATED',
  'COURIER_ASSIGNED',
  'ARRIVED_AT_PICKUP',
  'COLLECTED',
  'IN_TRANSIT',
  'ARRIVED_AT_DROPOFF',
  'DELIVERED',
  'FAILED',
  'RETURNING',
  'RETURNED',
  'CANCELLED',
  'NO_COURIER_FOUND',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const P2P_STATUSES = [
  'PENDING_PAYMENT',
  'PENDING',
  'COMPLETED',
  'CANCELLED',
  'REFUNDED',
] as const;
export type P2pStatus = (typeof P2P_STATUSES)[number];

export type Share = 'creator' | 'recipient';
export const SHARES: readonly Share[] = ['creator', 'recipient'];

/** What a delivery's state is made of: its status, its payment state, which shares are owed and paid. */
export interface Lifecycle {
  status: DeliveryStatus;
  p2pStatus: P2pStatus;
  /** Whether that party must pay something (amount > 0). */
  owes: Record<Share, boolean>;
  /** Whether that party has paid; stays true once refunded (`p2pStatus` says it was given back). */
  paid: Record<Share, boolean>;
}

/** A proof code the courier gave right: from then on the proof answers it. */
export interface ScannedProof {
  id: string;
  code: string;
}

export type LifecycleEvent =
  | { kind: 'PAID'; share: Share }
  /** A declined or expired checkout: the delivery is cancelled. */
  | { kind: 'PAYMENT_FAILED'; share: Share }
  /** The merchant's `POST /api/request/:deliveryId/cancel`. */
  | { kind: 'CANCEL' }
  | { kind: 'COURIER_ASSIGNED'; courierId: string }
  | { kind: 'ARRIVED_AT_PICKUP' }
  | { kind: 'COLLECTED'; proof?: ScannedProof }
  | { kind: 'IN_TRANSIT' }
  | { kind: 'ARRIVED_AT_DROPOFF' }
  | { kind: 'DELIVERED'; proof?: ScannedProof }
  | { kind: 'FAILED'; reason: string }
  | { kind: 'RETURNED'; proof?: ScannedProof }
  | { kind: 'NO_COURIER_FOUND' };
export type EventKind = LifecycleEvent['kind'];

/** What the order service must do after a transition, besides recording it. */
export type Effect =
  /** Give back a paid share, once. */
  | { kind: 'REFUND'; share: Share }
  /**
   * A share owed and not paid when the delivery is called off: its checkout is closed, so that
   * nobody pays for a delivery that will not happen (a payment already under way is given
   * back to its payer when it lands).
   */
  | { kind: 'CLOSE_CHECKOUT'; share: Share }
  | { kind: 'RELEASE_PACKAGES' }
  /** Every owed share is paid: matching may start. */
  | { kind: 'MATCHING_ELIGIBLE' }
  /** The delivery is over: any search for a courier ends, the courier holding it is free. */
  | { kind: 'END_MATCHING' }
  /** Delivered: what the courier collected on delivery goes where the merchant said. */
  | { kind: 'REMIT_COLLECTED' }
  /** Collected: the recipient is told the courier is on the way, with the tracking link. */
  | { kind: 'COURIER_ON_THE_WAY' }
  /**
   * Coming back: the sender is sent the code the courier must give to report `RETURNED`,
   * when the delivery takes proof codes at the sender's end (docs/deliveries.md).
   */
  | { kind: 'SEND_RETURN_CODE' }
  /**
   * The delivery is over: its messages not sent yet are withdrawn (a code, a payment link or
   * "on the way" for a delivery that ended would only mislead whoever reads it).
   */
  | { kind: 'WITHDRAW_MESSAGES' };

/** The delivery step a transition records. */
export interface Step {
  step: string;
  hidden: boolean;
}

export type Transition =
  | { ok: true; next: Lifecycle; step: Step | null; effects: Effect[] }
  /** Why not, naming the current status: the message of the caller's 400 or 409. */
  | { ok: false; message: string };

/** A condition beyond the status that the event must meet. */
export type Requirement =
  /** The event's share is owed and not paid yet. */
  | 'UNPAID_SHARE'
  /** Every owed share is paid (see `isMatchingEligible`). */
  | 'MATCHING_ELIGIBLE';

/** What a transition does with the money. */
export type Settlement =
  /** Marks the share paid; once every owed share is, P2P PENDING and MATCHING_ELIGIBLE. */
  | 'PAY'
  /** Gives every paid share back: P2P REFUNDED, or CANCELLED when nothing was paid. */
  | 'REFUND'
  /** The fee is earned, nothing is given back: P2P COMPLETED. */
  | 'EARN';

export interface Rule {
  readonly to: DeliveryStatus;
  readonly step: DeliveryStatus | 'PAYMENT_CONFIRMED';
  readonly hidden: boolean;
  readonly requires?: Requirement;
  readonly settles?: Settlement;
  /** The packages are free again for another delivery. */
  readonly releases?: boolean;
  /** What the courier collected on delivery (pay-on-delivery) is remitted. */
  readonly remits?: boolean;
  /** The recipient is told the courier is on the way. */
  readonly tellsRecipient?: boolean;
  /** The packages are coming back: the sender gets the code that proves their return. */
  readonly sendsReturnCode?: boolean;
}

/** A status change that records its own name as a visible step. */
const becomes = (
  status: DeliveryStatus,
  more: Omit<Rule, 'to' | 'step' | 'hidden'> = {},
): Rule => ({
  to: status,
  step: status,
  hidden: false,
  ...more,
});

/** Everything given back: the delivery ends without having been carried. */
const UNWIND = { settles: 'REFUND', releases: true } as const;

/** A failure once the packages are with the courier: they go back to the sender. */
const GOES_BACK = becomes('RETURNING', { sendsReturnCode: true });

/**
 * The lifecycle, the one table: for each status, the events it accepts and what they lead to.
 * An event a status does not list is refused. Statuses with no events are terminal.
 *
 * A failure before collection ends the delivery (FAILED, everything refunded: nothing was
 * carried); after collection the packages are with the courier and go back to the sender
 * (RETURNING, then RETURNED, proven by a code the sender is sent when the delivery takes codes
 * from them or is paid on delivery: `returnProof`), and the fee is kept for the trip there and
 * back.
 */
export const TRANSITIONS: {
  readonly [S in DeliveryStatus]: Readonly<Partial<Record<EventKind, Rule>>>;
} = {
  REQUEST_CREATED: {
    PAID: {
      to: 'REQUEST_CREATED',
      step: 'PAYMENT_CONFIRMED',
      hidden: true,
      requires: 'UNPAID_SHARE',
      settles: 'PAY',
    },
    PAYMENT_FAILED: becomes('CANCELLED', { requires: 'UNPAID_SHARE', ...UNWIND }),
    CANCEL: becomes('CANCELLED', UNWIND),
    COURIER_ASSIGNED: becomes('COURIER_ASSIGNED', { requires: 'MATCHING_ELIGIBLE' }),
    NO_COURIER_FOUND: becomes('NO_COURIER_FOUND', { requires: 'MATCHING_ELIGIBLE', ...UNWIND }),
  },
  COURIER_ASSIGNED: {
    ARRIVED_AT_PICKUP: becomes('ARRIVED_AT_PICKUP'),
    CANCEL: becomes('CANCELLED', UNWIND),
    FAILED: becomes('FAILED', UNWIND),
  },
  ARRIVED_AT_PICKUP: {
    // The package is in the courier's hands: from here it is coming (docs/deliveries.md).
    COLLECTED: becomes('COLLECTED', { tellsRecipient: true }),
    CANCEL: becomes('CANCELLED', UNWIND),
    FAILED: becomes('FAILED', UNWIND),
  },
  COLLECTED: {
    IN_TRANSIT: becomes('IN_TRANSIT'),
    FAILED: GOES_BACK,
  },
  IN_TRANSIT: {
    ARRIVED_AT_DROPOFF: becomes('ARRIVED_AT_DROPOFF'),
    FAILED: GOES_BACK,
  },
  ARRIVED_AT_DROPOFF: {
    DELIVERED: becomes('DELIVERED', { settles: 'EARN', remits: true }),
    FAILED: GOES_BACK,
  },
  RETURNING: {
    RETURNED: becomes('RETURNED', { settles: 'EARN', releases: true }),
  },
  DELIVERED: {},
  FAILED: {},
  RETURNED: {},
  CANCELLED: {},
  NO_COURIER_FOUND: {},
};
// Shared by every delivery the process handles: nothing may change it at run time.
for (const rules of Object.values(TRANSITIONS)) {
  Object.values(rules).forEach((rule) => Object.freeze(rule));
  Object.freeze(rules);
}
Object.freeze(TRANSITIONS);

/** How a refusal names what was attempted: "This delivery cannot be <verb>". */
const ATTEMPTS: Record<EventKind, string> = {
  PAID: 'paid',
  PAYMENT_FAILED: 'cancelled for a failed payment',
  CANCEL: 'cancelled',
  COURIER_ASSIGNED: 'assigned a courier',
  ARRIVED_AT_PICKUP: 'marked arrived at pickup',
  COLLECTED: 'marked collected',
  IN_TRANSIT: 'marked in transit',
  ARRIVED_AT_DROPOFF: 'marked arrived at drop-off',
  DELIVERED: 'marked delivered',
  FAILED: 'marked failed',
  RETURNED: 'marked returned',
  NO_COURIER_FOUND: 'closed for want of a courier',
};

export const EVENT_KINDS = Object.keys(ATTEMPTS) as EventKind[];

/** The statuses that accept `kind`, in lifecycle order. */
function statusesAccepting(kind: EventKind): DeliveryStatus[] {
  return DELIVERY_STATUSES.filter((status) => TRANSITIONS[status][kind] !== undefined);
}

const ACCEPTING = new Map(EVENT_KINDS.map((kind) => [kind, statusesAccepting(kind)]));

export const CANCELLABLE_STATUSES: readonly DeliveryStatus[] = statusesAccepting('CANCEL');

export function canCancel(status: DeliveryStatus): boolean {
  // `?.`: a status read from storage may be one this version does not know.
  return TRANSITIONS[status]?.CANCEL !== undefined;
}

/** A status that accepts no event: the delivery is over. */
export function isTerminal(status: DeliveryStatus): boolean {
  return Object.keys(TRANSITIONS[status] ?? {}).length === 0;
}

const allOwedPaid = (owes: Record<Share, boolean>, paid: Record<Share, boolean>) =>
  SHARES.every((share) => !owes[share] || paid[share]);

/** Every owed share is paid and no courier is assigned yet: matching may run. */
export function isMatchingEligible(state: Lifecycle): boolean {
  return state.status === 'REQUEST_CREATED' && allOwedPaid(state.owes, state.paid);
}

/**
 * A new delivery (REQUEST_CREATED), PENDING when every owed share is already paid (a wallet
 * payment) and PENDING_PAYMENT otherwise. A share that owes nothing counts as settled and is
 * never refunded, whatever `paid` says of it.
 */
export function initialLifecycle(
  owes: Record<Share, boolean>,
  paid: Record<Share, boolean>,
): Lifecycle {
  const settled = {
    creator: owes.creator && paid.creator,
    recipient: owes.recipient && paid.recipient,
  };
  return {
    status: 'REQUEST_CREATED',
    p2pStatus: allOwedPaid(owes, settled) ? 'PENDING' : 'PENDING_PAYMENT',
    owes: { ...owes },
    paid: settled,
  };
}

/** "A", "A and B", "A, B and C". */
function listed(items: readonly string[]): string {
  return items.length < 2
    ? items.join('')
    : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function refusedFor(status: DeliveryStatus, kind: EventKind): string {
  return (
    `This delivery cannot be ${ATTEMPTS[kind]}: it is ${status} ` +
    `(only ${listed(ACCEPTING.get(kind) ?? [])} deliveries can be)`
  );
}

/** Why `event` does not meet the rule's requirement, or null when it does. */
function unmet(state: Lifecycle, event: LifecycleEvent, requirement: Requirement): string | null {
  if (requirement === 'MATCHING_ELIGIBLE') {
    return allOwedPaid(state.owes, state.paid)
      ? null
      : `This delivery cannot be ${ATTEMPTS[event.kind]}: it is ${state.status} and ` +
          `${state.p2pStatus}; matching starts once every share is paid`;
  }
  // Only PAID and PAYMENT_FAILED carry a share, and only their rules require one.
  const share = 'share' in event ? event.share : undefined;
  if (share === undefined) return `${event.kind} names no share`;
  if (!state.owes[share]) return `The ${share} owes nothing on this delivery`;
  if (state.paid[share]) return `The ${share}'s share of this delivery is already paid`;
  return null;
}

/** What `rule` does with the money and the packages, and the payment state it leaves. */
function settle(
  state: Lifecycle,
  event: LifecycleEvent,
  rule: Rule,
): { paid: Record<Share, boolean>; p2pStatus: P2pStatus; effects: Effect[] } {
  const effects: Effect[] = [];
  let { p2pStatus } = state;
  const paid = { ...state.paid };
  switch (rule.settles) {
    case 'PAY':
      if ('share' in event) paid[event.share] = true;
      if (allOwedPaid(state.owes, paid)) {
        p2pStatus = 'PENDING';
        effects.push({ kind: 'MATCHING_ELIGIBLE' });
      }
      break;
    case 'REFUND': {
      const refunded = SHARES.filter((share) => paid[share]);
      for (const share of refunded) effects.push({ kind: 'REFUND', share });
      // Closed last (below): it may wait on the provider, and the packages and messages not.
      p2pStatus = refunded.length > 0 ? 'REFUNDED' : 'CANCELLED';
      break;
    }
    case 'EARN':
      p2pStatus = 'COMPLETED';
      break;
  }
  if (rule.releases) effects.push({ kind: 'RELEASE_PACKAGES' });
  if (rule.remits) effects.push({ kind: 'REMIT_COLLECTED' });
  if (rule.tellsRecipient) effects.push({ kind: 'COURIER_ON_THE_WAY' });
  if (rule.sendsReturnCode) effects.push({ kind: 'SEND_RETURN_CODE' });
  if (isTerminal(rule.to)) effects.push({ kind: 'END_MATCHING' }, { kind: 'WITHDRAW_MESSAGES' });
  if (rule.settles === 'REFUND') {
    // The share whose payment failed has its checkout ended already.
    const failed = event.kind === 'PAYMENT_FAILED' ? event.share : undefined;
    for (const share of SHARES) {
      if (state.owes[share] && !paid[share] && share !== failed) {
        effects.push({ kind: 'CLOSE_CHECKOUT', share });
      }
    }
  }
  return { paid, p2pStatus, effects };
}

/** What `event` makes of `state`, or why it cannot happen now. `state` is left unchanged. */
export function transition(state: Lifecycle, event: LifecycleEvent): Transition {
  const rule = TRANSITIONS[state.status]?.[event.kind];
  if (rule === undefined) return { ok: false, message: refusedFor(state.status, event.kind) };
  const refusal = rule.requires === undefined ? null : unmet(state, event, rule.requires);
  if (refusal !== null) return { ok: false, message: refusal };
  const { paid, p2pStatus, effects } = settle(state, event, rule);
  return {
    ok: true,
    next: { status: rule.to, p2pStatus, owes: { ...state.owes }, paid },
    step: { step: rule.step, hidden: rule.hidden },
    effects,
  };
}

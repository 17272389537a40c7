import fc from 'fast-check';
import {
  CANCELLABLE_STATUSES,
  DELIVERY_STATUSES,
  EVENT_KINDS,
  SHARES,
  TRANSITIONS,
  canCancel,
  initialLifecycle,
  isMatchingEligible,
  isTerminal,
  transition,
  type DeliveryStatus,
  type Effect,
  type EventKind,
  type Lifecycle,
  type LifecycleEvent,
  type P2pStatus,
  type Share,
} from '../../../services/order/lifecycle';

type Shares = Record<Share, boolean>;
const shares = (creator: boolean, recipient: boolean): Shares => ({ creator, recipient });

/** Paid from the creator's wallet at creation. */
const WALLET = () => initialLifecycle(shares(true, false), shares(true, false));
/** The creator pays through a checkout. */
const CHECKOUT = () => initialLifecycle(shares(true, false), shares(false, false));
/** SPLIT: the creator paid from the wallet, the recipient pays through a checkout link. */
const SPLIT = () => initialLifecycle(shares(true, true), shares(true, false));

const COURIER = '7b0f3c1e-2a4d-4c6b-9e8f-0a1b2c3d4e5f';

const COURIER_RUN: LifecycleEvent[] = [
  { kind: 'COURIER_ASSIGNED', courierId: COURIER },
  { kind: 'ARRIVED_AT_PICKUP' },
  { kind: 'COLLECTED' },
  { kind: 'IN_TRANSIT' },
  { kind: 'ARRIVED_AT_DROPOFF' },
  { kind: 'DELIVERED' },
];

/** Applies `event`, which must be accepted. */
function apply(state: Lifecycle, event: LifecycleEvent) {
  const result = transition(state, event);
  if (!result.ok) throw new Error(`${event.kind} refused: ${result.message}`);
  return result;
}

/** The state after `events`, each of which must be accepted. */
function after(state: Lifecycle, ...events: LifecycleEvent[]): Lifecycle {
  return events.reduce((current, event) => apply(current, event).next, state);
}

function refusal(state: Lifecycle, event: LifecycleEvent): string {
  const result = transition(state, event);
  if (result.ok) throw new Error(`${event.kind} accepted in ${state.status}`);
  return result.message;
}

/** Every event: those that carry a share once for each. */
const ALL_EVENTS: LifecycleEvent[] = EVENT_KINDS.flatMap((kind) => eventsOf(kind));

function eventsOf(kind: EventKind): LifecycleEvent[] {
  if (kind === 'PAID' || kind === 'PAYMENT_FAILED') return SHARES.map((share) => ({ kind, share }));
  if (kind === 'FAILED') return [{ kind, reason: 'Nobody at the address' }];
  return [{ kind } as LifecycleEvent];
}

describe('initialLifecycle', () => {
  it('is REQUEST_CREATED and PENDING when paid from the wallet, eligible for matching', () => {
    expect(WALLET()).toEqual({
      status: 'REQUEST_CREATED',
      p2pStatus: 'PENDING',
      owes: shares(true, false),
      paid: shares(true, false),
    });
    expect(isMatchingEligible(WALLET())).toBe(true);
  });

  it('is PENDING_PAYMENT while an owed share is unpaid, not eligible', () => {
    for (const state of [CHECKOUT(), SPLIT()]) {
      expect(state.p2pStatus).toBe('PENDING_PAYMENT');
      expect(isMatchingEligible(state)).toBe(false);
    }
  });

  it('is PENDING and eligible when nobody owes anything', () => {
    const free = initialLifecycle(shares(false, false), shares(false, false));
    expect(free.p2pStatus).toBe('PENDING');
    expect(isMatchingEligible(free)).toBe(true);
  });

  it('counts a share that owes nothing as unpaid, so that it is never refunded', () => {
    const state = initialLifecycle(shares(true, false), shares(true, true));
    expect(state.paid).toEqual(shares(true, false));
    expect(apply(state, { kind: 'CANCEL' }).effects).toEqual([
      { kind: 'REFUND', share: 'creator' },
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'WITHDRAW_MESSAGES' },
    ]);
  });

  it('copies what it is given: changing the arguments later changes nothing', () => {
    const owes = shares(true, false);
    const state = initialLifecycle(owes, shares(false, false));
    owes.recipient = true;
    expect(state.owes).toEqual(shares(true, false));
  });
});

describe('payment', () => {
  it('PAID of the last owed share: PENDING, MATCHING_ELIGIBLE, a hidden PAYMENT_CONFIRMED step', () => {
    expect(apply(CHECKOUT(), { kind: 'PAID', share: 'creator' })).toEqual({
      ok: true,
      next: {
        status: 'REQUEST_CREATED',
        p2pStatus: 'PENDING',
        owes: shares(true, false),
        paid: shares(true, false),
      },
      step: { step: 'PAYMENT_CONFIRMED', hidden: true },
      effects: [{ kind: 'MATCHING_ELIGIBLE' }],
    });
  });

  it('PAID of one of two owed shares: still PENDING_PAYMENT, not yet eligible', () => {
    const both = initialLifecycle(shares(true, true), shares(false, false));
    const first = apply(both, { kind: 'PAID', share: 'recipient' });
    expect(first.next.p2pStatus).toBe('PENDING_PAYMENT');
    expect(first.effects).toEqual([]);
    expect(first.step).toEqual({ step: 'PAYMENT_CONFIRMED', hidden: true });
    const second = apply(first.next, { kind: 'PAID', share: 'creator' });
    expect(second.next.p2pStatus).toBe('PENDING');
    expect(second.effects).toEqual([{ kind: 'MATCHING_ELIGIBLE' }]);
  });

  it('refuses a second PAID of a paid share, and PAID of a share that owes nothing', () => {
    expect(refusal(WALLET(), { kind: 'PAID', share: 'creator' })).toBe(
      "The creator's share of this delivery is already paid",
    );
    expect(refusal(WALLET(), { kind: 'PAID', share: 'recipient' })).toBe(
      'The recipient owes nothing on this delivery',
    );
  });

  it('refuses PAID after a cancel, naming the status (the caller gives the late money back)', () => {
    const cancelled = after(CHECKOUT(), { kind: 'CANCEL' });
    expect(refusal(cancelled, { kind: 'PAID', share: 'creator' })).toBe(
      'This delivery cannot be paid: it is CANCELLED (only REQUEST_CREATED deliveries can be)',
    );
  });

  it('PAYMENT_FAILED cancels: the other, paid share is refunded and the packages released', () => {
    expect(apply(SPLIT(), { kind: 'PAYMENT_FAILED', share: 'recipient' })).toEqual({
      ok: true,
      next: {
        status: 'CANCELLED',
        p2pStatus: 'REFUNDED',
        owes: shares(true, true),
        paid: shares(true, false),
      },
      step: { step: 'CANCELLED', hidden: false },
      effects: [
        { kind: 'REFUND', share: 'creator' },
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'WITHDRAW_MESSAGES' },
      ],
    });
  });

  it('PAYMENT_FAILED with nothing paid: CANCELLED, nothing refunded', () => {
    const result = apply(CHECKOUT(), { kind: 'PAYMENT_FAILED', share: 'creator' });
    expect(result.next.p2pStatus).toBe('CANCELLED');
    expect(result.effects).toEqual([
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'WITHDRAW_MESSAGES' },
    ]);
  });

  it('refuses PAYMENT_FAILED of a paid share: a stale checkout outcome changes nothing', () => {
    expect(refusal(WALLET(), { kind: 'PAYMENT_FAILED', share: 'creator' })).toBe(
      "The creator's share of this delivery is already paid",
    );
  });
});

describe('cancel', () => {
  it('is allowed before collection only', () => {
    expect(CANCELLABLE_STATUSES).toEqual([
      'REQUEST_CREATED',
      'COURIER_ASSIGNED',
      'ARRIVED_AT_PICKUP',
    ]);
    for (const status of DELIVERY_STATUSES) {
      expect(canCancel(status)).toBe(CANCELLABLE_STATUSES.includes(status));
    }
  });

  it.each([
    ['REQUEST_CREATED', []],
    ['COURIER_ASSIGNED', COURIER_RUN.slice(0, 1)],
    ['ARRIVED_AT_PICKUP', COURIER_RUN.slice(0, 2)],
  ] as const)('from %s refunds the paid share, releases, records CANCELLED', (status, events) => {
    const state = after(WALLET(), ...events);
    expect(state.status).toBe(status);
    expect(apply(state, { kind: 'CANCEL' })).toEqual({
      ok: true,
      next: { ...state, status: 'CANCELLED', p2pStatus: 'REFUNDED' },
      step: { step: 'CANCELLED', hidden: false },
      effects: [
        { kind: 'REFUND', share: 'creator' },
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'WITHDRAW_MESSAGES' },
      ],
    });
  });

  it('refunds both shares of a SPLIT paid by both', () => {
    const paid = after(SPLIT(), { kind: 'PAID', share: 'recipient' });
    expect(apply(paid, { kind: 'CANCEL' }).effects).toEqual([
      { kind: 'REFUND', share: 'creator' },
      { kind: 'REFUND', share: 'recipient' },
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'WITHDRAW_MESSAGES' },
    ]);
  });

  it('before payment: CANCELLED with nothing to refund, the checkout owed closed', () => {
    const result = apply(CHECKOUT(), { kind: 'CANCEL' });
    expect(result.next.p2pStatus).toBe('CANCELLED');
    // Closed last: it may wait on the provider, the packages and messages not.
    expect(result.effects).toEqual([
      { kind: 'RELEASE_PACKAGES' },
      { kind: 'END_MATCHING' },
      { kind: 'WITHDRAW_MESSAGES' },
      { kind: 'CLOSE_CHECKOUT', share: 'creator' },
    ]);
  });

  it('answers a refusal that reads as the 400 of POST /api/request/:id/cancel', () => {
    const inTransit = after(WALLET(), ...COURIER_RUN.slice(0, 4));
    expect(refusal(inTransit, { kind: 'CANCEL' })).toBe(
      'This delivery cannot be cancelled: it is IN_TRANSIT (only REQUEST_CREATED, ' +
        'COURIER_ASSIGNED and ARRIVED_AT_PICKUP deliveries can be)',
    );
    const cancelled = after(WALLET(), { kind: 'CANCEL' });
    expect(refusal(cancelled, { kind: 'CANCEL' })).toMatch(
      /^This delivery cannot be cancelled: it is CANCELLED \(/,
    );
  });
});

describe('the courier run', () => {
  it('goes from REQUEST_CREATED to DELIVERED, each step visible and named after its status', () => {
    let state = WALLET();
    for (const event of COURIER_RUN) {
      const result = apply(state, event);
      expect(result.step).toEqual({ step: event.kind, hidden: false });
      expect(result.next.status).toBe(event.kind);
      // Collected: the recipient is told it is coming. Delivered: the pay-on-delivery money
      // is remitted and the courier is free again.
      const effects: Partial<Record<EventKind, Effect[]>> = {
        COLLECTED: [{ kind: 'COURIER_ON_THE_WAY' }],
        DELIVERED: [
          { kind: 'REMIT_COLLECTED' },
          { kind: 'END_MATCHING' },
          { kind: 'WITHDRAW_MESSAGES' },
        ],
      };
      expect(result.effects).toEqual(effects[event.kind] ?? []);
      state = result.next;
    }
    expect(state.p2pStatus).toBe('COMPLETED');
    expect(isTerminal(state.status)).toBe(true);
  });

  it('refuses an event out of order, naming the current status and the one it needs', () => {
    const assigned = after(WALLET(), COURIER_RUN[0]);
    expect(refusal(assigned, { kind: 'IN_TRANSIT' })).toBe(
      'This delivery cannot be marked in transit: it is COURIER_ASSIGNED (only COLLECTED deliveries can be)',
    );
    expect(refusal(assigned, { kind: 'COURIER_ASSIGNED', courierId: COURIER })).toBe(
      'This delivery cannot be assigned a courier: it is COURIER_ASSIGNED (only REQUEST_CREATED deliveries can be)',
    );
  });

  it('assigns no courier before every owed share is paid', () => {
    expect(refusal(SPLIT(), { kind: 'COURIER_ASSIGNED', courierId: COURIER })).toBe(
      'This delivery cannot be assigned a courier: it is REQUEST_CREATED and PENDING_PAYMENT; ' +
        'matching starts once every share is paid',
    );
    const paid = after(SPLIT(), { kind: 'PAID', share: 'recipient' });
    expect(apply(paid, { kind: 'COURIER_ASSIGNED', courierId: COURIER }).next.status).toBe(
      'COURIER_ASSIGNED',
    );
    expect(isMatchingEligible(after(paid, { kind: 'COURIER_ASSIGNED', courierId: COURIER }))).toBe(
      false,
    );
  });

  it('FAILED before collection ends the delivery: everything refunded, packages released', () => {
    const atPickup = after(WALLET(), ...COURIER_RUN.slice(0, 2));
    expect(apply(atPickup, { kind: 'FAILED', reason: 'Sender not there' })).toEqual({
      ok: true,
      next: { ...atPickup, status: 'FAILED', p2pStatus: 'REFUNDED' },
      step: { step: 'FAILED', hidden: false },
      effects: [
        { kind: 'REFUND', share: 'creator' },
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'WITHDRAW_MESSAGES' },
      ],
    });
  });

  it.each([3, 4, 5])(
    'FAILED after collection (%i events in) sends the packages back: RETURNING, then RETURNED',
    (done) => {
      const carrying = after(WALLET(), ...COURIER_RUN.slice(0, done));
      const failed = apply(carrying, { kind: 'FAILED', reason: 'Recipient refused' });
      expect(failed.next).toEqual({ ...carrying, status: 'RETURNING' });
      expect(failed.step).toEqual({ step: 'RETURNING', hidden: false });
      expect(failed.effects).toEqual([{ kind: 'SEND_RETURN_CODE' }]);
      expect(refusal(failed.next, { kind: 'CANCEL' })).toMatch(/it is RETURNING/);
      expect(refusal(failed.next, { kind: 'DELIVERED' })).toMatch(/it is RETURNING/);
      const returned = apply(failed.next, { kind: 'RETURNED' });
      expect(returned.next).toEqual({ ...carrying, status: 'RETURNED', p2pStatus: 'COMPLETED' });
      expect(returned.effects).toEqual([
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'WITHDRAW_MESSAGES' },
      ]);
    },
  );

  it('NO_COURIER_FOUND from an eligible delivery: refunded and released', () => {
    expect(apply(WALLET(), { kind: 'NO_COURIER_FOUND' })).toEqual({
      ok: true,
      next: { ...WALLET(), status: 'NO_COURIER_FOUND', p2pStatus: 'REFUNDED' },
      step: { step: 'NO_COURIER_FOUND', hidden: false },
      effects: [
        { kind: 'REFUND', share: 'creator' },
        { kind: 'RELEASE_PACKAGES' },
        { kind: 'END_MATCHING' },
        { kind: 'WITHDRAW_MESSAGES' },
      ],
    });
    expect(refusal(CHECKOUT(), { kind: 'NO_COURIER_FOUND' })).toMatch(
      /it is REQUEST_CREATED and PENDING_PAYMENT/,
    );
  });

  it('leaves the state it is given unchanged', () => {
    const state = SPLIT();
    const copy = structuredClone(state);
    apply(state, { kind: 'PAID', share: 'recipient' });
    apply(state, { kind: 'CANCEL' });
    expect(state).toEqual(copy);
  });
});

describe('the table', () => {
  it('cannot be changed at run time: every delivery of the process shares it', () => {
    expect(Object.isFrozen(TRANSITIONS)).toBe(true);
    expect(Object.isFrozen(TRANSITIONS.REQUEST_CREATED)).toBe(true);
    expect(Object.isFrozen(TRANSITIONS.REQUEST_CREATED.CANCEL)).toBe(true);
  });

  it('refuses every event for a status it does not know (a newer version wrote it), naming it', () => {
    const unknown = { ...WALLET(), status: 'LOST_AT_SEA' as DeliveryStatus };
    expect(canCancel(unknown.status)).toBe(false);
    expect(refusal(unknown, { kind: 'CANCEL' })).toBe(
      'This delivery cannot be cancelled: it is LOST_AT_SEA (only REQUEST_CREATED, ' +
        'COURIER_ASSIGNED and ARRIVED_AT_PICKUP deliveries can be)',
    );
  });
});

/** The payment state a delivery must show, given its status and what was paid. */
function expectedP2p(state: Lifecycle): P2pStatus {
  const allPaid = SHARES.every((share) => !state.owes[share] || state.paid[share]);
  const anyPaid = SHARES.some((share) => state.paid[share]);
  switch (state.status) {
    case 'REQUEST_CREATED':
      return allPaid ? 'PENDING' : 'PENDING_PAYMENT';
    case 'DELIVERED':
    case 'RETURNED':
      return 'COMPLETED';
    case 'CANCELLED':
    case 'NO_COURIER_FOUND':
    case 'FAILED':
      return anyPaid ? 'REFUNDED' : 'CANCELLED';
    default:
      // A courier is on it: assigned only once everything owed was paid.
      expect(allPaid).toBe(true);
      return 'PENDING';
  }
}

/** Every state reachable from any new delivery, by any event. */
function reachable(): Lifecycle[] {
  const seen = new Map<string, Lifecycle>();
  const queue: Lifecycle[] = [];
  for (const owes of [0, 1, 2, 3].map((bits) => shares(!!(bits & 1), !!(bits & 2)))) {
    for (const paid of [0, 1, 2, 3].map((bits) => shares(!!(bits & 1), !!(bits & 2)))) {
      queue.push(initialLifecycle(owes, paid));
    }
  }
  while (queue.length > 0) {
    const state = queue.shift() as Lifecycle;
    const key = JSON.stringify(state);
    if (seen.has(key)) continue;
    seen.set(key, state);
    for (const event of ALL_EVENTS) {
      const result = transition(state, event);
      if (result.ok) queue.push(result.next);
    }
  }
  return [...seen.values()];
}

describe('every reachable state, every event (exhaustive)', () => {
  const states = reachable();

  it('reaches every status', () => {
    expect(new Set(states.map((s) => s.status))).toEqual(new Set(DELIVERY_STATUSES));
  });

  const named = (flags: Shares) => SHARES.filter((share) => flags[share]).join('+') || 'none';
  it.each(
    states.map((s) => [
      `${s.status} ${s.p2pStatus} owes ${named(s.owes)} paid ${named(s.paid)}`,
      s,
    ]),
  )('%s: consistent payment state, and each event answered by the table', (_name, state) => {
    expect(state.p2pStatus).toBe(expectedP2p(state));
    for (const share of SHARES) if (state.paid[share]) expect(state.owes[share]).toBe(true);
    expect(transition(state, { kind: 'CANCEL' }).ok).toBe(canCancel(state.status));
    for (const event of ALL_EVENTS) {
      const result = transition(state, event);
      const rule = TRANSITIONS[state.status][event.kind];
      if (rule === undefined || isTerminal(state.status)) {
        expect(result).toEqual({ ok: false, message: expect.stringContaining(state.status) });
        continue;
      }
      if (!result.ok) {
        // Refused by the rule's requirement, never for want of a rule.
        expect(rule.requires).toBeDefined();
        continue;
      }
      expect(result.next.status).toBe(rule.to);
      expect(result.step).toEqual({ step: rule.step, hidden: rule.hidden });
      // Money and packages move only on the way into a terminal status (so at most once),
      // except MATCHING_ELIGIBLE, which a delivery still waiting for a courier receives.
      const kinds = result.effects.map((e) => e.kind);
      if (kinds.includes('REFUND') || kinds.includes('RELEASE_PACKAGES')) {
        expect(isTerminal(result.next.status)).toBe(true);
      }
      for (const effect of result.effects) {
        if (effect.kind === 'REFUND') expect(state.paid[effect.share]).toBe(true);
      }
      if (kinds.includes('MATCHING_ELIGIBLE')) {
        expect(isMatchingEligible(state)).toBe(false);
        expect(isMatchingEligible(result.next)).toBe(true);
      }
      if (event.kind === 'COURIER_ASSIGNED') expect(isMatchingEligible(state)).toBe(true);
    }
  });
});

/** An event the current status accepts (to make progress), or any event at all. */
const nextEvent = fc.record({ accepted: fc.boolean(), pick: fc.nat() });
const shareFlags = fc.record({ creator: fc.boolean(), recipient: fc.boolean() });

function choose(state: Lifecycle, { accepted, pick }: { accepted: boolean; pick: number }) {
  const kinds = Object.keys(TRANSITIONS[state.status]) as EventKind[];
  const pool = accepted && kinds.length > 0 ? kinds.flatMap(eventsOf) : ALL_EVENTS;
  return pool[pick % pool.length];
}

describe('random event sequences (property)', () => {
  it('never leave a terminal status; refund, release and eligibility happen at most once', () => {
    fc.assert(
      fc.property(
        shareFlags,
        shareFlags,
        fc.array(nextEvent, { maxLength: 40 }),
        (owes, paid, picks) => {
          let state = initialLifecycle(owes, paid);
          const effects: Effect[] = [];
          let eligibleTimes = isMatchingEligible(state) ? 1 : 0;
          const visited: DeliveryStatus[] = [state.status];
          let endedBy: LifecycleEvent | undefined;
          for (const pick of picks) {
            const event = choose(state, pick);
            const before = structuredClone(state);
            const result = transition(state, event);
            expect(state).toEqual(before);
            if (isTerminal(state.status)) expect(result.ok).toBe(false);
            if (!result.ok) {
              expect(result.message.length).toBeGreaterThan(0);
              continue;
            }
            effects.push(...result.effects);
            if (isTerminal(result.next.status)) endedBy = event;
            eligibleTimes += result.effects.filter((e) => e.kind === 'MATCHING_ELIGIBLE').length;
            state = result.next;
            if (visited.at(-1) !== state.status) visited.push(state.status);
            expect(state.p2pStatus).toBe(expectedP2p(state));
          }
          for (const share of SHARES) {
            const refunds = effects.filter((e) => e.kind === 'REFUND' && e.share === share);
            expect(refunds.length).toBeLessThanOrEqual(1);
            // Everything paid is given back exactly when the delivery ends REFUNDED.
            const expected = state.p2pStatus === 'REFUNDED' && state.paid[share] ? 1 : 0;
            expect(refunds).toHaveLength(expected);
            // A share owed and never paid has its checkout closed at most once, and only when the
            // delivery is called off before it was paid; never one refunded too.
            // Exactly when the delivery was called off with it owed and not paid, unless it was
            // its own payment that failed (its checkout is over already).
            const closed = effects.filter((e) => e.kind === 'CLOSE_CHECKOUT' && e.share === share);
            const ownFailure = endedBy?.kind === 'PAYMENT_FAILED' && endedBy.share === share;
            const calledOffOwing =
              state.status === 'CANCELLED' && state.owes[share] && !state.paid[share];
            expect(closed).toHaveLength(calledOffOwing && !ownFailure ? 1 : 0);
            if (closed.length > 0) expect(refunds).toHaveLength(0);
          }
          expect(effects.filter((e) => e.kind === 'RELEASE_PACKAGES').length).toBeLessThanOrEqual(
            1,
          );
          expect(eligibleTimes).toBeLessThanOrEqual(1);
          if (state.status === 'DELIVERED') {
            expect(visited).toEqual(['REQUEST_CREATED', ...COURIER_RUN.map((e) => e.kind)]);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

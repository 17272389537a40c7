/**
 * Couriers at work, as the courier app drives them, for the benchmarks that need deliveries
 * taken to the door (bench:run, bench:soak): free, a courier reports where it is and polls its
 * offers; offered, it accepts and takes the delivery through its steps with the codes its
 * stops' contacts were sent by SMS (to the Termii stand-in the benchmark runs).
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { COURIER_STEPS, type CourierStep } from '../../services/order/courier-run';
import { asCourier, type Courier, type Offer } from '../../test/support/couriers';
import { DESTINATION, ORIGIN } from '../../test/support/deliveries';
import { percentile } from '../../test/support/load';
import type { SmsProvider } from '../../test/support/receivers';
import { SHED_STATUSES } from './wallet-reconcile';

/**
 * The steps a courier takes a delivery through after accepting it, in order; each answer must
 * show the status of the step's name (`COURIER_STEPS`).
 */
export const STEPS = [
  'arrived-at-pickup',
  'collected',
  'in-transit',
  'arrived-at-dropoff',
  'delivered',
] as const satisfies readonly CourierStep[];

/** A courier call timed, by what it does. */
export type CallName = 'location' | 'offers' | 'accept' | 'current' | (typeof STEPS)[number];

/** How long a courier waits for a code before it counts as never sent. */
const CODE_TIMEOUT_MS = 120_000;

/**
 * What was seen of one delivery, in ms of the benchmark's clock. Its courier may see it before
 * its merchant sees the 201 (matching starts before the answer goes back).
 */
export interface Seen {
  /** When its 201 came (set by the merchants' side); unset until then. */
  requestedAt?: number;
  offeredAt?: number;
  assignedAt?: number;
  deliveredAt?: number;
  /** Accepts answered 200: never more than one for a delivery. */
  accepted: number;
}

/** What the couriers saw and how long their calls took, shared by every shift. */
export class CourierRun<S extends Seen = Seen> {
  readonly deliveries = new Map<string, S>();
  readonly calls = new Map<CallName, number[]>();
  /** How long couriers waited for a code to reach its stop's contact, once they needed it. */
  readonly codeWaits: number[] = [];
  readonly problems: string[] = [];
  /** Courier calls answered as load (503, 504, none) and tried again. */
  shedCalls = 0;
  /** Set to end every shift once its courier is free (a delivery under way is finished first). */
  finished = false;

  constructor(private readonly fresh: () => S) {}

  time(name: CallName, ms: number): void {
    const list = this.calls.get(name) ?? [];
    list.push(ms);
    this.calls.set(name, list);
  }

  /** The delivery's record, made by whichever side sees it first. */
  seen(deliveryId: string): S {
    let seen = this.deliveries.get(deliveryId);
    if (!seen) {
      seen = this.fresh();
      this.deliveries.set(deliveryId, seen);
    }
    return seen;
  }

  problem(what: string): void {
    if (this.problems.length < 50) this.problems.push(what);
  }

  get delivered(): number {
    let n = 0;
    for (const seen of this.deliveries.values()) if (seen.deliveredAt !== undefined) n++;
    return n;
  }

  /** Each courier call's count, p50 and p99, against a location report's: the cheapest call. */
  printCalls(): void {
    const ms = (values: number[], p: number) => percentile(values, p).toFixed(0).padStart(6);
    const refP50 = percentile(this.calls.get('location') ?? [], 50);
    console.log(
      `\ncourier calls (ms), ${this.shedCalls} answered as load and tried again\n                                 count    p50    p99   p50 against a location report`,
    );
    for (const [name, values] of this.calls) {
      const ratio = (percentile(values, 50) / refP50).toFixed(2);
      console.log(
        `  ${name.padEnd(28)} ${String(values.length).padStart(6)} ${ms(values, 50)} ${ms(values, 99)}   ${ratio}×`,
      );
    }
  }

  /** Deliveries accepted more than once: each a fault. */
  acceptedTwice(): string[] {
    return [...this.deliveries].flatMap(([id, seen]) =>
      seen.accepted > 1 ? [`delivery ${id} accepted ${seen.accepted} times`] : [],
    );
  }
}

/** Somewhere within about a kilometre of the pickup: where couriers wait for work. */
export function nearPickup(): { lat: number; lon: number } {
  const jitter = () => randomInt(-900, 900) / 100_000;
  return { lat: ORIGIN.lat + jitter(), lon: ORIGIN.lon + jitter() };
}

type CodeType = 'collection' | 'delivery';

const CODE_TEXT = /delivery (\S+): your (?:new )?(collection|delivery) code is (\d{6})/;

/**
 * The codes the SMS stand-in received, by delivery and stop, the newest of each kept. Each
 * message is read once, so a long run's thousands of messages cost nothing per lookup.
 */
export class CodeBook {
  private read = 0;
  private readonly codes = new Map<string, string>();

  constructor(private readonly sms: SmsProvider) {}

  /**
   * The code SMS'd for a delivery's stop, once the stand-in has it; undefined if it never came,
   * or once `stop` says to stop waiting.
   */
  async codeFor(
    trackingId: string,
    type: CodeType,
    stop: () => boolean,
  ): Promise<string | undefined> {
    const deadline = Date.now() + CODE_TIMEOUT_MS;
    while (Date.now() < deadline && !stop()) {
      this.catchUp();
      const code = this.codes.get(`${trackingId} ${type}`);
      if (code) return code;
      await sleep(100);
    }
    return undefined;
  }

  private catchUp(): void {
    const { requests } = this.sms;
    for (; this.read < requests.length; this.read++) {
      const found = CODE_TEXT.exec(String(requests[this.read].body.sms));
      if (found) this.codes.set(`${found[1]} ${found[2]}`, found[3]);
    }
  }
}

/** How often a courier reports and polls, and until when it works. */
export interface ShiftPace {
  reportEveryMs: number;
  pollMs: number;
  /** Epoch ms after which the courier stops looking for work. */
  deadline: number;
}

/** The statuses of `STEPS`, in order: a delivery at one of them has taken the steps up to it. */
const STEP_STATUSES: readonly string[] = STEPS.map((step) => COURIER_STEPS[step]);

/** A courier call's answer, or the lack of one (status 0). */
type Reply = Omit<Awaited<ReturnType<typeof asCourier>>, 'headers'>;

/**
 * One courier's shift: free, it reports and polls; offered, it accepts and drives the delivery.
 * An answer of load (503, 504, none) is tried again after a poll's pause, as the courier app
 * would; a step's, once the delivery's status says it did not go through (a step repeated
 * answers 409).
 */
export async function shift(
  url: string,
  courier: Courier,
  run: CourierRun,
  codes: CodeBook,
  pace: ShiftPace,
): Promise<void> {
  const once = async (name: CallName, method: string, path: string, json?: unknown) => {
    const t0 = performance.now();
    const reply: Reply = await asCourier(url, courier, method, path, json).catch(
      (error: unknown) => ({ status: 0, text: String(error), body: undefined }),
    );
    run.time(name, performance.now() - t0);
    return reply;
  };
  /**
   * A call tried again while shed, until the shift's deadline; `wentThrough` tells whether a
   * shed one did after all.
   */
  const call = async (
    name: CallName,
    method: string,
    path: string,
    json?: unknown,
    wentThrough?: () => Promise<Reply | undefined>,
  ): Promise<Reply> => {
    for (;;) {
      const reply = await once(name, method, path, json);
      if (!SHED_STATUSES.has(reply.status) || Date.now() >= pace.deadline) return reply;
      run.shedCalls++;
      await sleep(pace.pollMs);
      const answered = await wentThrough?.();
      if (answered) return answered;
    }
  };
  const expect200 = (name: CallName, reply: { status: number; text: string }) => {
    if (reply.status === 200) return true;
    run.problem(`courier ${courier.id} ${name}: ${reply.status} ${reply.text.slice(0, 200)}`);
    return false;
  };
  let reportedAt = performance.now();
  const report = async (at: { lat: number; lon: number }) => {
    reportedAt = performance.now();
    expect200('location', await call('location', 'POST', '/courier/location', at));
  };
  const current = () => call('current', 'GET', '/courier/deliveries/current');
  /**
   * The delivery as it stands when `step` went through, as a step's answer would show it;
   * undefined when it did not. Once delivered, the courier holds nothing.
   */
  const stepTaken = (deliveryId: string, step: CourierStep) => async () => {
    const held = await current();
    const data = held.body?.data;
    if (held.status !== 200) return undefined;
    if (data?.id !== deliveryId) {
      return step === 'delivered'
        ? { ...held, body: { data: { status: 'DELIVERED' } } }
        : undefined;
    }
    const at = STEP_STATUSES.indexOf(data.status);
    return at >= STEP_STATUSES.indexOf(COURIER_STEPS[step]) ? held : undefined;
  };

  const drive = async (offer: Offer) => {
    const seen = run.seen(offer.deliveryId);
    const held = await current();
    if (!expect200('current', held)) return;
    const trackingId = held.body?.data?.trackingId as string | undefined;
    if (held.body?.data?.id !== offer.deliveryId || !trackingId) {
      run.problem(
        `courier ${courier.id} holds ${held.text.slice(0, 200)} after accepting ${offer.deliveryId}`,
      );
      return;
    }
    for (const step of STEPS) {
      let body: unknown;
      if (step === 'collected' || step === 'delivered') {
        const type = step === 'collected' ? 'collection' : 'delivery';
        const asked = performance.now();
        const code = await codes.codeFor(trackingId, type, () => run.finished);
        // The run is over: what is left of this delivery is nobody's fault.
        if (!code && run.finished) return;
        run.codeWaits.push(performance.now() - asked);
        if (!code) {
          run.problem(`delivery ${offer.deliveryId}: no ${type} code was sent`);
          return;
        }
        body = { code };
      }
      if (step === 'arrived-at-dropoff')
        await report({ lat: DESTINATION.lat, lon: DESTINATION.lon });
      const path = `/courier/deliveries/${offer.deliveryId}/${step}`;
      const answer = await call(step, 'POST', path, body, stepTaken(offer.deliveryId, step));
      if (!expect200(step, answer)) return;
      if (answer.body?.data?.status !== COURIER_STEPS[step]) {
        const found = answer.body?.data?.status;
        // Retried after a shed answer that went through: a later status is as good.
        if (STEP_STATUSES.indexOf(found) < STEP_STATUSES.indexOf(COURIER_STEPS[step])) {
          run.problem(
            `delivery ${offer.deliveryId} ${step}: answered ${answer.text.slice(0, 200)}`,
          );
          return;
        }
      }
    }
    seen.deliveredAt = performance.now();
    // Back where the work is: a courier freed near waiting searches wakes them.
    await report(nearPickup());
  };

  while (!run.finished && Date.now() < pace.deadline) {
    if (performance.now() - reportedAt >= pace.reportEveryMs) await report(nearPickup());
    const offers = await call('offers', 'GET', '/courier/offers');
    const offer = expect200('offers', offers) ? (offers.body.data as Offer[])[0] : undefined;
    if (!offer) {
      await sleep(pace.pollMs);
      continue;
    }
    const seen = run.seen(offer.deliveryId);
    seen.offeredAt ??= performance.now();
    // Accepting again answers as the first accept did.
    const accepted = await call('accept', 'POST', `/courier/offers/${offer.id}/accept`);
    // 409: the offer ran out, or the delivery no longer needs a courier; the next poll goes on.
    if (accepted.status === 409) continue;
    if (!expect200('accept', accepted)) {
      await sleep(pace.pollMs);
      continue;
    }
    seen.accepted++;
    seen.assignedAt = performance.now();
    await drive(offer);
  }
}

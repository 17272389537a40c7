import type { Config } from '../../libs/config';
import { badRequest, conflict, notFound, unprocessable } from '../../libs/errors';
import {
  hashProofCode,
  newCodeSeed,
  newProofCode,
  proofCodeMatches,
  seededProofCode,
} from './codes';
import {
  recordIds,
  type DeliveryRecord,
  type ProofRecord,
  type StoredAddress,
} from './delivery-record';
import { DELIVERY_STATUSES, type DeliveryStatus, type ScannedProof } from './lifecycle';
import {
  contactAt,
  dropsWithdrawnText,
  earlierProofCodeMessageIds,
  proofCodeMessageIds,
  proofCodeMessages,
} from './notifications';
import type { OrderStore } from './store';

export const PROOF_NOT_FOUND = 'Proof not found on this delivery';

/** The statuses before `step`, in lifecycle order. */
const before = (step: DeliveryStatus) =>
  new Set(DELIVERY_STATUSES.slice(0, DELIVERY_STATUSES.indexOf(step)));

/** While a proof may still be given: the courier has not passed the step that takes it. */
const OPEN_UNTIL: Record<ProofRecord['type'], ReadonlySet<DeliveryStatus>> = {
  COLLECTION: before('COLLECTED'),
  DELIVERY: before('DELIVERED'),
  // Created on the way back, and RETURNING leads only to RETURNED.
  RETURN: new Set(['RETURNING']),
};

/** Whether a proof of `type` may still be given in `status`. */
export const proofOpenIn = (type: ProofRecord['type'], status: DeliveryStatus) =>
  OPEN_UNTIL[type].has(status);

/**
 * The code the delivery record holds: the first, issued with the delivery, for a collection or
 * delivery proof; none for a return proof, whose codes are all `proof_codes` (generation 1 on).
 */
const recordGeneration = (type: ProofRecord['type']) => (type === 'RETURN' ? 0 : 1);

/** Whose code it is: the sender hands the packages over and takes them back. */
const stopOf = (delivery: DeliveryRecord, type: ProofRecord['type']) =>
  type === 'DELIVERY' ? delivery.destinationId : delivery.originId;

/** Wrong codes a proof takes before it locks until the merchant issues a new code. */
export const MAX_WRONG_CODES = 5;
/** Codes a proof may have in all: the first and the merchant's new ones. */
export const MAX_PROOF_CODES = 6;

const label = (proof: ProofRecord) => `${proof.type.toLowerCase()} code`;

export const proofLocked = (proof: ProofRecord) =>
  `The ${label(proof)} is locked after ${MAX_WRONG_CODES} wrong codes; ask the merchant to issue a new one (POST /api/deliveries/:deliveryId/proofs/${proof.id}/code)`;

/**
 * A proof's code now: the first is the delivery record's, later ones are `proof_codes` whose
 * messages were queued. `claimed` is the last generation taken, queued or not.
 */
interface CurrentCode {
  generation: number;
  codeHash: string;
  claimed: number;
}

/**
 * Proof codes as the courier gives them: compared in constant time against the HMAC kept at
 * rest. Each try takes the next of the generation's `MAX_WRONG_CODES` tries before its code is
 * compared, by inserting `<proofId>:<generation>:<n>`, so that however many come at once at
 * most five codes are compared: a burst of guesses read "not locked" together when the try
 * was counted only after a wrong comparison. A right code gives its try back (while it is
 * compared it holds one, so a wrong code at that instant may read the proof locked); a try
 * whose process stops before the comparison counts as wrong. The merchant may issue a new code,
 * which starts a new generation with its own count.
 */
export class ProofChecks {
  /** Live: a withdrawn message's text (its dead code) is dropped, as a sent one's is. */
  private readonly dropWithdrawnText: boolean;

  constructor(
    private readonly store: OrderStore,
    private readonly secret: string,
    appEnv: Config['appEnv'],
  ) {
    this.dropWithdrawnText = dropsWithdrawnText(appEnv);
  }

  /**
   * A new code takes over once its messages are queued, not when it is claimed: a reissue
   * whose queueing failed (or whose process stopped before it) leaves the code before it
   * working, since nobody was told the new one. Its generation stays taken (its messages may
   * yet have been stored by a write whose answer was lost) and the next reissue claims past it.
   */
  private async current(
    deliveryId: string,
    proof: Pick<ProofRecord, 'id' | 'type' | 'codeHash'>,
  ): Promise<CurrentCode> {
    const first = recordGeneration(proof.type);
    const code: CurrentCode = { generation: first, codeHash: proof.codeHash, claimed: first };
    for (let generation = first + 1; generation <= MAX_PROOF_CODES; generation++) {
      const codeHash = await this.store.proofCode(proof.id, generation);
      if (!codeHash) break;
      code.claimed = generation;
      const ids = proofCodeMessageIds(deliveryId, proof.type, generation);
      if (await this.store.anyNotificationStored(ids)) {
        Object.assign(code, { generation, codeHash });
      }
    }
    return code;
  }

  /** The number of the try this call takes, undefined when every one is taken (locked). */
  private async takeTry(proof: ProofRecord, generation: number): Promise<number | undefined> {
    for (let n = 1; n <= MAX_WRONG_CODES; n++) {
      if (await this.store.claimProofAttempt(proof.id, generation, n)) return n;
    }
    return undefined;
  }

  /** The scanned proof when `code` is right; otherwise the error to answer, the try counted. */
  async check(
    deliveryId: string,
    proof: ProofRecord,
    code: string | undefined,
  ): Promise<ScannedProof> {
    const { generation, codeHash } = await this.current(deliveryId, proof);
    if (generation === 0) {
      // No code is in force yet (its sending is being settled): nobody could have given one.
      throw conflict(
        `No ${label(proof)} has been sent to the sender yet; try again in a minute, or ask the merchant to issue one (POST /api/deliveries/:deliveryId/proofs/${proof.id}/code)`,
      );
    }
    if (code === undefined) {
      throw badRequest(`code is required: the ${label(proof)} the person gave you`, [
        { field: 'code', message: `the ${label(proof)} is required` },
      ]);
    }
    const n = await this.takeTry(proof, generation);
    if (n === undefined) throw conflict(proofLocked(proof));
    if (proofCodeMatches(this.secret, proof.id, code, codeHash)) {
      await this.store.releaseProofAttempt(proof.id, generation, n);
      // Read again: a new code issued while this one was checked has told the merchant the
      // old one stopped working (they may have issued it because the old one leaked).
      if ((await this.current(deliveryId, proof)).generation !== generation) {
        throw unprocessable(`That ${label(proof)} was replaced by a new one; ask for the latest`);
      }
      return { id: proof.id, code };
    }
    // The tries taken, not this one's number: a right code gives its try back, so a later
    // wrong one may take a lower number than the wrong ones before it hold.
    const taken = await this.store.proofAttemptsTaken(proof.id, generation, MAX_WRONG_CODES);
    const left = Math.max(0, MAX_WRONG_CODES - taken);
    if (left === 0) throw conflict(proofLocked(proof));
    throw unprocessable(
      `Wrong ${label(proof)}; ${left} ${left === 1 ? 'try' : 'tries'} left before it locks`,
    );
  }

  /**
   * The merchant's new code for a proof not given yet (once it is queued the old code stops
   * working and the count of wrong codes starts again): sent to the stop's contact through
   * the outbox, never answered; the earlier codes' messages not sent yet are withdrawn (a dead
   * code would only mislead the person). Should the call stop before that, the sender finds
   * them replaced (`replaced`) and withdraws them itself. 404 for a proof not on the delivery, 409 once it can
   * no longer be given. A call that fails before its code is queued leaves the old code working.
   */
  async issueAgain(
    delivery: DeliveryRecord,
    proofId: string,
    addresses: Map<string, StoredAddress>,
  ): Promise<ProofRecord> {
    const proof = delivery.proofs.find((p) => p.id === proofId);
    if (!proof) throw notFound(PROOF_NOT_FOUND);
    const { status } = delivery.lifecycle;
    if (proof.scannedAt || !proofOpenIn(proof.type, status)) {
      throw conflict(
        `The ${label(proof)} can no longer be issued: the delivery is ${status}${proof.scannedAt ? ' and the code was given' : ''}`,
      );
    }
    const stop = addresses.get(stopOf(delivery, proof.type));
    if (!stop) throw new Error(`delivery ${delivery._id} lost its addresses`);
    const { code, generation, replacing } = await this.reissue(delivery._id, proof);
    const now = new Date();
    await this.store.enqueue(
      proofCodeMessages(delivery, proof.type, code, contactAt(stop), now, generation, replacing),
    );
    // Read again once queued: another call may have issued a later code meanwhile, whose own
    // withdrawal ran before this code was queued. Then this one is dead too.
    const latest = (await this.current(delivery._id, proof)).generation;
    const dead = earlierProofCodeMessageIds(delivery._id, proof.type, latest);
    await this.store.supersedeMessages(dead, now, this.dropWithdrawnText);
    return proof;
  }

  /**
   * The first code of a returning delivery's RETURN proof, for the sender (effect
   * `SEND_RETURN_CODE`): nothing once a code is queued, or once the delivery is no longer
   * RETURNING (an operator recorded the return). Settled by its writer, by the sweep, or by
   * both at once, it queues one code under the same messages' ids (`firstReturnCode`).
   */
  async sendReturnCode(delivery: DeliveryRecord): Promise<void> {
    const proof = delivery.proofs.find((p) => p.type === 'RETURN');
    if (!proof || proof.scannedAt || delivery.lifecycle.status !== 'RETURNING') return;
    if ((await this.current(delivery._id, proof)).generation > 0) return;
    const code = await this.firstReturnCode(proof);
    // The merchant's new code took the first number first: that call queues its own.
    if (code === null) return;
    const stop = await this.store.address(stopOf(delivery, proof.type));
    if (!stop) throw new Error(`delivery ${delivery._id} lost its addresses`);
    await this.store.enqueue(
      proofCodeMessages(delivery, proof.type, code, contactAt(stop), new Date(), 1),
    );
  }

  /**
   * A return proof's first code, made from a random seed claimed with its number (beside its
   * HMAC, as every code's), so that whoever settles the effect again makes the same code: a
   * random code claimed afresh by each would spend a number each time (six in all) and send
   * the person a second code. The seed is as safe at rest as the HMAC: neither gives the code
   * up without the secret. Null when the merchant's new code holds the number (no seed).
   */
  private async firstReturnCode(proof: ProofRecord): Promise<string | null> {
    const seed = newCodeSeed();
    const code = seededProofCode(this.secret, proof.id, seed);
    const codeHash = hashProofCode(this.secret, proof.id, code);
    if (await this.store.claimProofCode(proof.id, 1, codeHash, seed)) return code;
    const claimed = await this.store.proofCodeSeed(proof.id, 1);
    return claimed ? seededProofCode(this.secret, proof.id, claimed) : null;
  }

  /**
   * Whether the message of a proof's code `generation` is dead: a later code's messages are
   * queued. Read by the sender before each attempt of a proof code's message, since the
   * withdrawal that follows a new code's queueing may never have run (its call stopped): one
   * read by `_id` while no new code was claimed (the next generation's claim).
   */
  async replaced(deliveryId: string, type: ProofRecord['type'], generation: number) {
    // The proof's id is named after its delivery and type: no read of the delivery.
    const proof = { id: recordIds(deliveryId).proof(type), type, codeHash: '' };
    return (await this.current(deliveryId, proof)).generation > generation;
  }

  /** A new generation claimed for the proof, not yet in force: the plain code, to send. */
  private async reissue(
    deliveryId: string,
    proof: ProofRecord,
  ): Promise<{ code: string; generation: number; replacing: boolean }> {
    for (;;) {
      const { claimed: taken, generation: inForce } = await this.current(deliveryId, proof);
      const next = taken + 1;
      if (next > MAX_PROOF_CODES) {
        throw conflict(
          `The ${label(proof)} was issued ${MAX_PROOF_CODES} times already; cancel and request the delivery again`,
        );
      }
      const code = newProofCode();
      const claimed = await this.store.claimProofCode(
        proof.id,
        next,
        hashProofCode(this.secret, proof.id, code),
      );
      // A return proof's first code the merchant issues may follow a claim never queued.
      if (claimed) return { code, generation: next, replacing: inForce > 0 };
    }
  }
}

import { Schema, type Connection, type InferSchemaType } from 'mongoose';
import {
  ENTRY_TYPES,
  INSUFFICIENT_BALANCE,
  debitOfRefund,
  refundReference,
  type EntryType,
  type LedgerEntry,
  type Posting,
  type WalletBalance,
} from '../../libs/contracts/payment';
import {
  WaybillError,
  conflict,
  isWaybillError,
  serviceUnavailable,
  unprocessable,
} from '../../libs/errors';

/** How many entries the verify reads between two looks at its deadline. */
const VERIFY_DEADLINE_EVERY = 1_000;
import {
  markedRecorded,
  passRecordsIn,
  runPass,
  unrecordedSince,
  type BackfillPass,
} from '../../libs/backfills';
import { insertOnce, raiseById } from '../../libs/mongo';
import { Turns } from '../../libs/turns';
import { formatNaira } from '../../libs/money';
import {
  LedgerAudit,
  adminCreditReference,
  adminDebitReference,
  entryId,
  nextBalance,
  reversalPart,
  reversalReference,
  signedAmount,
  type LedgerProblem,
} from './ledger';

/**
 * One entry of a wallet's ledger, never changed once written. Its `_id` is
 * `<walletId>:<sequence>`: the insert of the next entry is the lock (decision 16).
 */
const entrySchema = new Schema(
  {
    _id: { type: String, required: true },
    walletId: { type: String, required: true },
    sequence: { type: Number, required: true },
    type: { type: String, required: true, enum: ENTRY_TYPES },
    /** Signed: negative for a debit. */
    amountKobo: { type: Number, required: true },
    balanceKobo: { type: Number, required: true },
    reference: { type: String, required: true },
    description: { type: String, default: null },
    /** The operator who posted it (`RequestMeta.operator`), for an operator's move; else unset. */
    postedBy: { type: String },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false },
);
// For MongoDB; FerretDB 1.24 uses none but `_id` (every lookup here is by `_id`).
entrySchema.index({ walletId: 1, sequence: 1 }, { unique: true });

/**
 * A wallet's head: the sequence of its last entry as last seen, a hint that saves walking the
 * chain from its start. It may lag behind (it is written after the entry), never run ahead.
 */
const walletSchema = new Schema(
  {
    _id: { type: String, required: true },
    sequence: { type: Number, required: true },
  },
  { timestamps: true, versionKey: false },
);

/** A reference's claim by a refund that came before its debit. */
const VOIDED = 'VOIDED';

/**
 * A business reference, claimed by insert so that what it names is posted once. Its entry is
 * found without searching: none exists before `fromSequence` (the claim came first), and
 * `checkedThrough` records how far later entries were read without meeting it.
 */
const referenceSchema = new Schema(
  {
    _id: { type: String, required: true },
    walletId: { type: String, required: true },
    /** An entry's type, or `VOIDED`: a debit given up before it came (`refundDebit`). */
    type: { type: String, required: true, enum: [...ENTRY_TYPES, VOIDED] },
    amountKobo: { type: Number, required: true },
    fromSequence: { type: Number, required: true },
    checkedThrough: { type: Number, required: true },
    /** Set once its entry is written. */
    entrySequence: { type: Number, default: null },
    description: { type: String, default: null },
    /** Its entry's `postedBy`: the operator whose claim came first. */
    postedBy: { type: String },
  },
  { timestamps: true, versionKey: false },
);

/**
 * A debit given up after its claim: a refund found it claimed, not written and not covered by
 * the balance, and answered that nothing was taken (`refundDebit`). `_id` is the debit's
 * reference. A posting of that debit that writes it after all reads this and gives it back.
 */
const givenUpSchema = new Schema(
  {
    _id: { type: String, required: true },
    walletId: { type: String, required: true },
    createdAt: { type: Date, required: true },
    /** When the repair sweep found nothing left to do for it (`repairGivenUp`); null until. */
    settledAt: { type: Date, default: null },
    /** When the repair sweep looks at a mark whose debit is not written yet (or too new) again. */
    recheckAt: { type: Date, default: null },
    /** Set when listed open first (`ledger_given_up_open`): the backfill passes skip it. */
    recordedFirst: { type: Boolean },
  },
  { versionKey: false },
);
givenUpSchema.index({ settledAt: 1 });

/**
 * A mark not settled yet, by the debit's reference, and when the repair sweep looks at it next:
 * the sweep's list, removed once the mark is settled, so that the sweep scans what is open and
 * not every mark ever made (FerretDB pushes down no filter but `_id`). Listed before its mark;
 * marks made before the list, or by a node of the version before, are listed by a backfill.
 */
const openGivenUpSchema = new Schema(
  {
    _id: { type: String, required: true },
    recheckAt: { type: Date, required: true },
  },
  { versionKey: false },
);
openGivenUpSchema.index({ recheckAt: 1 });

/** The passes of the backfill that lists the marks made before the list (libs/backfills). */
const ledgerPassSchema = new Schema(
  {
    _id: { type: String, required: true },
    startedAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/**
 * An operator's correcting debit refused for want of balance, by its reference: sent again,
 * it takes nothing. Apart from `ledger_given_up`, whose marks give a written debit back.
 */
const refusedSchema = new Schema(
  {
    _id: { type: String, required: true },
    walletId: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { versionKey: false },
);

/**
 * How long a debit written after its refund gave it up is left to its own posting, which reads
 * the mark and gives it back next, before verify reports it kept (decision 121).
 */
export const GIVEN_UP_GRACE_MS = 60_000;
/**
 * How long a debit given up and never written may still be written (a retry of its request's
 * debit, a refund posting it): past this its mark is settled and no longer read by the sweep.
 */
export const GIVEN_UP_UNWRITTEN_MS = 86_400_000;
/** How often the repair sweep looks again at a mark it could not settle yet. */
export const GIVEN_UP_RECHECK_MS = 60_000;
/** The record of the first pass listing the marks made before their open list. */
const OPEN_GIVEN_UP_LISTED = 'ledger_given_up_open';

export type EntryRecord = InferSchemaType<typeof entrySchema>;
export type ReferenceRecord = InferSchemaType<typeof referenceSchema>;

export function defineLedgerModels(connection: Connection) {
  return {
    Entry: connection.model('LedgerEntry', entrySchema, 'ledger_entries'),
    Wallet: connection.model('Wallet', walletSchema, 'wallets'),
    Reference: connection.model('LedgerReference', referenceSchema, 'ledger_references'),
    GivenUp: connection.model('LedgerGivenUp', givenUpSchema, 'ledger_given_up'),
    OpenGivenUp: connection.model('LedgerOpenGivenUp', openGivenUpSchema, 'ledger_given_up_open'),
    LedgerPass: connection.model('LedgerBackfillPass', ledgerPassSchema, 'ledger_backfill_passes'),
    Refused: connection.model('LedgerRefusedDebit', refusedSchema, 'ledger_refused_debits'),
  };
}

export type LedgerModels = ReturnType<typeof defineLedgerModels>;

export interface PostRequest {
  walletId: string;
  type: EntryType;
  /** Unsigned. */
  amountKobo: number;
  reference: string;
  description?: string | null;
  /** The operator posting it, for an operator's move (decision 157). */
  postedBy?: string;
}

/** An operator's move: the note its owner reads, and the operator who makes it. */
export interface OperatorsMove {
  note?: string;
  postedBy?: string;
}

/**
 * The refund of a debit given up after its claim: all of it, under the refund's reference, so
 * that the refund and the debit's own posting, whichever writes it, write it once.
 */
const givenUpRefund = (walletId: string, debitReference: string, amountKobo: number) => ({
  walletId,
  type: 'REFUND' as const,
  amountKobo,
  reference: refundReference(debitReference),
  description: 'Given back: its request was undone while this debit was being posted',
});

/** 409 for an operator's credit under a debit's refund of another amount than it took. */
function refuseOtherAmount(
  debit: { _id: string; amountKobo: number },
  reference: string,
  amountKobo: number,
): void {
  if (amountKobo === debit.amountKobo) return;
  throw conflict(
    `Debit ${debit._id} took NGN ${formatNaira(debit.amountKobo)}: credit that amount under ${reference}, or another reference for another credit`,
  );
}

/** The 409 of a debit written after it was given up: its refund is written too. */
export const givenUpDebit = (reference: string) =>
  `Reference ${reference} was given up while this debit was being posted (its request was undone): what it took was given back`;

export function toLedgerEntry(record: EntryRecord): LedgerEntry {
  return {
    id: record._id,
    walletId: record.walletId,
    sequence: record.sequence,
    type: record.type as EntryType,
    amountKobo: record.amountKobo,
    balanceKobo: record.balanceKobo,
    reference: record.reference,
    description: record.description ?? null,
    createdAt: record.createdAt.toISOString(),
  };
}

export interface LedgerReport {
  clean: boolean;
  wallets: number;
  cashAccounts: number;
  entries: number;
  /** Every problem found: more than `problems` lists when they passed its most. */
  problemCount: number;
  problems: LedgerProblem[];
  checkedAt: string;
}

/** What a reversal has taken back, and the parts of it counted (`LedgerStore.takeBack`). */
export interface TakenBack {
  takenKobo: number;
  parts: number;
}

/**
 * Parts of a reversal one call gives up at most (each a race with a debit elsewhere that spent
 * what it was to take); the next call goes on.
 */
const PARTS_GIVEN_UP_AT_ONCE = 3;

/** Postings to one wallet take turns in this process (libs/turns). */
const postings = new Turns();

/**
 * Wallets as append-only ledgers on a database whose conditional updates are not atomic:
 * every write is an insert whose `_id` decides who wins, and every read on the way of a
 * posting is by `_id`, so that a posting costs the same on a wallet of ten entries or ten
 * million.
 */
export class LedgerStore {
  /** `turns`: the postings this store's take turns with (a test gives another: a second replica). */
  constructor(
    private readonly models: () => LedgerModels,
    private readonly turns: Turns = postings,
  ) {}

  private get m() {
    return this.models();
  }

  async entry(walletId: string, sequence: number): Promise<EntryRecord | null> {
    if (sequence < 1) return null;
    return this.m.Entry.findById(entryId(walletId, sequence)).lean<EntryRecord>();
  }

  /** The sequence the wallet's head last recorded (0 for a wallet without entries). */
  private async hint(walletId: string): Promise<number> {
    const head = await this.m.Wallet.findById(walletId).lean();
    return head?.sequence ?? 0;
  }

  /** The wallet's last entry: from the head's hint, forward by `_id` while entries exist. */
  async lastEntry(walletId: string): Promise<EntryRecord | null> {
    const hint = await this.hint(walletId);
    let last = await this.entry(walletId, hint);
    for (let next = await this.entry(walletId, hint + 1); next;) {
      last = next;
      next = await this.entry(walletId, next.sequence + 1);
    }
    if (last && last.sequence > hint) {
      // Saves the next reader the walk; losing it costs nothing but that.
      this.advanceHead(walletId, last.sequence).catch(() => undefined);
    }
    return last;
  }

  async balance(walletId: string): Promise<WalletBalance> {
    const last = await this.lastEntry(walletId);
    return {
      userId: walletId,
      balanceKobo: last?.balanceKobo ?? 0,
      sequence: last?.sequence ?? 0,
      updatedAt: last ? last.createdAt.toISOString() : null,
    };
  }

  /** Entries newest first: `limit` of them before sequence `before` (exclusive), by `_id`. */
  async entriesBefore(walletId: string, before: number, limit: number): Promise<EntryRecord[]> {
    const sequences: number[] = [];
    for (let s = before - 1; s >= 1 && sequences.length < limit; s--) sequences.push(s);
    const found = await Promise.all(sequences.map((s) => this.entry(walletId, s)));
    return found.filter((e): e is EntryRecord => e !== null);
  }

  /**
   * A page of a chain, newest first: `limit` entries before sequence `before`, from its end
   * when absent or past it (`account`, when the caller has read it, saves reading it again).
   */
  async page(
    walletId: string,
    { limit, before }: { limit: number; before?: number },
    account?: WalletBalance,
  ): Promise<LedgerEntry[]> {
    const fromEnd = async () =>
      this.entriesBefore(walletId, (account ?? (await this.balance(walletId))).sequence + 1, limit);
    if (before === undefined) return (await fromEnd()).map(toLedgerEntry);
    const found = await this.entriesBefore(walletId, before, limit);
    // Entries are numbered 1 to the end without a gap: no entry just below `before` means
    // `before` is past the end (or at the start, where the page is empty anyway).
    const pastEnd = before > 1 && found[0]?.sequence !== before - 1;
    return (pastEnd ? await fromEnd() : found).map(toLedgerEntry);
  }

  /** The head's hint moves forward only; a lost update leaves it behind, which is harmless. */
  private async advanceHead(walletId: string, sequence: number): Promise<void> {
    await raiseById(this.m.Wallet, walletId, { sequence }, { timestamps: true });
  }

  /** The reference's claim: this request's, or the one an earlier request made. */
  private async claim(request: PostRequest): Promise<ReferenceRecord> {
    const { walletId, type, amountKobo, reference } = request;
    const fromSequence = (await this.hint(walletId)) + 1;
    const now = new Date();
    const record: ReferenceRecord = {
      _id: reference,
      walletId,
      type,
      amountKobo,
      fromSequence,
      checkedThrough: fromSequence - 1,
      entrySequence: null,
      description: request.description ?? null,
      ...(request.postedBy === undefined ? {} : { postedBy: request.postedBy }),
      createdAt: now,
      updatedAt: now,
    };
    if (await insertOnce(() => this.m.Reference.create(record))) return record;
    const earlier = await this.m.Reference.findById(reference).lean<ReferenceRecord>();
    if (!earlier) throw new Error(`reference ${reference} is claimed but cannot be read`);
    if (earlier.type === VOIDED) {
      throw conflict(
        `Reference ${reference} was given up before this debit came (its request was undone): nothing was taken`,
      );
    }
    if (
      earlier.walletId !== walletId ||
      earlier.type !== type ||
      earlier.amountKobo !== amountKobo
    ) {
      throw conflict(
        `Reference ${reference} was already used for another posting (a ${earlier.type.toLowerCase()} of ${earlier.amountKobo} kobo); use a new reference`,
      );
    }
    return earlier;
  }

  private async recordPosted(reference: string, sequence: number): Promise<void> {
    await this.m.Reference.updateOne(
      { _id: reference },
      { $set: { entrySequence: sequence, checkedThrough: sequence } },
    );
  }

  /**
   * Gives the debit posted under `debitReference` back, whole, once, under
   * `refund:<debitReference>` (described so). Null when no debit of `walletId` was taken under it. A debit
   * not even claimed yet (its call still on its way, or waiting for the wallet) is given up for
   * good (`VOIDED`), so that an undone request's late debit takes nothing. A debit claimed but
   * not written yet (a request still posting, on this replica or another, one that died
   * half-way, or one refused for want of balance) is given up (`ledger_given_up`) and looked
   * for once more: its own posting, under way elsewhere, may write it once a credit lands.
   * Found, it is given back here; written later, its posting reads that it was given up and
   * gives it back itself (`post`). Either way the refund's reference makes it once (decision
   * 115). It is not posted here to be given back: a debit refused for want of balance, posted
   * by its request's undoing once the wallet was funded, showed the merchant a debit and a
   * refund for a request answered "nothing was taken" (decision 184).
   */
  refundDebit(
    walletId: string,
    debitReference: string,
    description: string | null,
  ): Promise<Posting | null> {
    return this.turns.run(walletId, async () => {
      let debit = await this.findReference(debitReference);
      if (!debit) {
        if (await this.giveUp(debitReference, walletId)) return null;
        debit = await this.findReference(debitReference);
      }
      if (debit?.type !== 'DEBIT' || debit.walletId !== walletId) return null;
      const posted = await this.postedEntry(debit);
      // Given back already by an operator under the refund's admin reference, as credits of a
      // debit still standing were posted before session 64: not given back a second time. Only
      // a debit written: one still posting may yet be refused, and gave nothing to give back.
      const byOperator = posted && (await this.operatorsRefund(debitReference, walletId));
      if (byOperator && byOperator.amountKobo === debit.amountKobo) {
        return { entry: toLedgerEntry(byOperator), replayed: true };
      }
      if (posted) {
        return this.postNow({
          walletId,
          type: 'REFUND',
          amountKobo: debit.amountKobo,
          reference: refundReference(debitReference),
          description,
        });
      }
      return this.giveUpClaimed(walletId, debit._id, debit.amountKobo);
    });
  }

  /**
   * Gives up a claimed debit not written when it was looked at: marked (`GivenUp`), so that its
   * own posting, writing it after the mark, reads the mark and gives it back; and given back
   * here if it was written before the mark. The refund, whoever writes it, is written once.
   */
  private async giveUpClaimed(
    walletId: string,
    reference: string,
    amountKobo: number,
  ): Promise<Posting | null> {
    const now = new Date();
    const list = () =>
      insertOnce(() => this.m.OpenGivenUp.create({ _id: reference, recheckAt: now }));
    // Listed first, so that no mark is made that the repair sweep would not read; and again
    // after, should a sweep have dropped the entry as an orphan meanwhile (this call stalled
    // between the two, or a clock of ours behind).
    await list();
    await insertOnce(() =>
      this.m.GivenUp.create(markedRecorded({ _id: reference, walletId, createdAt: now })),
    );
    await list();
    if (!(await this.isPosted(reference))) return null;
    return this.postNow(givenUpRefund(walletId, reference, amountKobo));
  }

  /**
   * An operator's credit of a wallet (`POST /admin/users/:userId/wallet/credit`), posted under
   * `admin:<reference>`, apart from every other kind. Except the repair verify's `UNREFUNDED`
   * asks for: a credit under `refund:<debit>` of a debit of this wallet its refund gave up and
   * that was taken is posted as that refund itself, under its own reference, so that whichever
   * comes first (the operator, a retry of the request's undoing, the debit's own posting) the
   * others meet the reference and give nothing more (decision 121). So is one of a debit still
   * standing (its delivery not ended), of what it took, its delivery's refund then meeting it;
   * 409 while that debit has taken nothing. 409 when such a credit does
   * not give back what the debit took, or the debit took nothing, or it names another wallet's
   * debit (posted here, it would read as that debit's refund, and its wallet would get nothing).
   */
  creditByOperator(
    walletId: string,
    reference: string,
    amountKobo: number,
    { note = 'Credit by an operator', postedBy }: OperatorsMove = {},
  ): Promise<Posting> {
    return this.turns.run(walletId, async () => {
      const debitReference = debitOfRefund(reference);
      const debit = debitReference ? await this.findReference(debitReference) : null;
      if (debit && debit.walletId !== walletId) {
        throw conflict(
          `Debit ${debit._id} was taken from wallet ${debit.walletId}, not this one: credit its refund to that wallet, or give this credit another reference`,
        );
      }
      const undone =
        debit?.walletId === walletId &&
        (debit.type === VOIDED || (debit.type === 'DEBIT' && (await this.isGivenUp(debit._id))));
      if (debit?.type === 'DEBIT' && !undone) {
        // A debit still standing (its delivery not ended yet): the credit is its refund, under
        // the refund's own reference, so that the refund its delivery's end asks for later
        // meets it and gives nothing more. Posted apart, the wallet got the money back twice.
        if (!(await this.postedEntry(debit))) {
          throw conflict(
            `Debit ${debit._id} has taken nothing: its request is still posting it (retry in a minute), or it was refused for want of balance and there is nothing to give back`,
          );
        }
        // Credited already under the refund's admin reference (by a node of the version before
        // this one, or before it): that credit is the refund, not credited again.
        const byOperator = await this.operatorsRefund(debit._id, walletId);
        if (byOperator) return { entry: toLedgerEntry(byOperator), replayed: true };
        refuseOtherAmount(debit, reference, amountKobo);
        return this.postNow({
          walletId,
          type: 'REFUND',
          amountKobo,
          reference: refundReference(debit._id),
          description: note,
          postedBy,
        });
      }
      if (!debit || !undone) {
        return this.postNow({
          walletId,
          type: 'CREDIT',
          amountKobo,
          reference: adminCreditReference(reference),
          description: note,
          postedBy,
        });
      }
      if (debit.type === VOIDED || !(await this.postedEntry(debit))) {
        throw conflict(
          `Debit ${debit._id} took nothing (its request was undone before it was written): there is nothing to give back`,
        );
      }
      refuseOtherAmount(debit, reference, amountKobo);
      return this.postNow({ ...givenUpRefund(walletId, debit._id, debit.amountKobo), postedBy });
    });
  }

  /**
   * An operator's correcting debit (`POST /admin/users/:userId/wallet/debit`), under
   * `admin-debit:<reference>`: taken when it comes or never. Refused for want of balance (422),
   * its refusal is recorded (`ledger_refused_debits`), so that the same reference sent again
   * once the wallet is credited takes nothing (409) rather than what the operator has since
   * settled another way. A copy sent at the same moment that found the balance (a credit
   * landing between the two) is taken, once, and a copy sent later answers it as taken: the
   * refusal is read only for a debit not written. Never given back by the ledger's repairs.
   */
  debitByOperator(
    walletId: string,
    reference: string,
    amountKobo: number,
    { note = 'Correction by an operator', postedBy }: OperatorsMove = {},
  ): Promise<Posting> {
    return this.turns.run(walletId, async () => {
      const debitReference = adminDebitReference(reference);
      const refused = () => this.m.Refused.findById(debitReference).lean();
      if (!(await this.isPosted(debitReference)) && (await refused())) {
        throw conflict(
          `Debit ${reference} was refused when it came (the wallet held less) and took nothing: send it again under a new reference`,
        );
      }
      const request: PostRequest = {
        walletId,
        type: 'DEBIT',
        amountKobo,
        reference: debitReference,
        description: note,
        postedBy,
      };
      try {
        return await this.postNow(request);
      } catch (err) {
        if (isWaybillError(err) && err.type === 'UNPROCESSABLE') {
          await insertOnce(() =>
            this.m.Refused.create({ _id: debitReference, walletId, createdAt: new Date() }),
          );
        }
        throw err;
      }
    });
  }

  /**
   * Takes back from a wallet what a payment provider gave back to its payer (`Reversals`): up to
   * `amountKobo` in all, in parts under `reversalReference(reversalId, n)`, each taking what the
   * wallet holds when it is posted. A part's reference names it and its amount is its first
   * claimant's, so a retry, another replica or the sweep continues where the last stopped and
   * never takes a part twice. A part the wallet no longer covers when it is written (spent in
   * between by a debit on another replica) is given up as `refundDebit` gives up a debit, and
   * the next part takes what the wallet holds instead. Callers take a reversal back one at a
   * time (`Reversals`' turns): a part given up is then never being written by another caller,
   * and a part left claimed and unwritten is one whose caller stopped (a late write of it, by
   * a caller that stopped past its turn, is given back all the same). `from`: parts already
   * counted (a hint the caller kept from an earlier call). Answers what is taken in all, and
   * the parts counted.
   */
  takeBack(
    walletId: string,
    reversal: { id: string; amountKobo: number; description: string },
    {
      from = { takenKobo: 0, parts: 0 },
      holding = () => true,
    }: {
      from?: TakenBack;
      /** Whether the caller still holds its turn: past it, no part is written or given up. */
      holding?: () => boolean;
    } = {},
  ): Promise<TakenBack> {
    return this.turns.run(walletId, async () => {
      let { takenKobo, parts } = from;
      for (let givenUp = 0; givenUp < PARTS_GIVEN_UP_AT_ONCE && holding();) {
        const reference = reversalReference(reversal.id, parts + 1);
        const claimed = await this.findReference(reference);
        let kept: number | 'stop';
        if (claimed) {
          if (claimed.walletId !== walletId) {
            throw new Error(`reference ${reference} is not of wallet ${walletId}`);
          }
          kept = await this.keptOfPart(claimed);
        } else {
          const balanceKobo = (await this.lastEntry(walletId))?.balanceKobo ?? 0;
          const take = reversalPart(balanceKobo, reversal.amountKobo - takenKobo);
          if (take === 0) break;
          const { description } = reversal;
          const part = {
            walletId,
            type: 'DEBIT' as const,
            amountKobo: take,
            reference,
            description,
          };
          kept = await this.postPart(part);
        }
        // Claimed by another replica for another amount: its claim is read by the next call.
        if (kept === 'stop') break;
        if (kept === 0) givenUp += 1;
        takenKobo += kept;
        parts += 1;
      }
      // All of it, as counted: counted again from the ledger before the caller settles it, in
      // case a part counted was given up since (by a caller that ran past its turn).
      if (takenKobo >= reversal.amountKobo) {
        return { takenKobo: await this.keptOfParts(walletId, reversal.id, parts), parts };
      }
      return { takenKobo, parts };
    });
  }

  /**
   * Gives back to a wallet what a reversal took from it (`takeBack`): its checkout's payment went
   * back to its payer after all (decision 174), so the wallet owes none of it. Each part kept is
   * given back whole, once, under its refund's reference (`refund:reversal:<id>:<n>`); a part
   * claimed and not written (its caller stopped, or is past its turn) is given up as
   * `refundDebit` gives one up; the first part never claimed is given up for good (`VOIDED`):
   * a caller past its turn, which writes one part at most after its turn, cannot claim it, and
   * a later call of this stops there. Callers give a reversal back in its
   * turn, as they take it. Answers what is given back in all (a retry answers the same), or null
   * when the caller's turn ran out first.
   */
  giveBackReversal(
    walletId: string,
    reversal: { id: string; description: string },
    holding: () => boolean,
  ): Promise<number | null> {
    return this.turns.run(walletId, async () => {
      let givenBackKobo = 0;
      for (let n = 1; ; n++) {
        if (!holding()) return null;
        const reference = reversalReference(reversal.id, n);
        let claim = await this.findReference(reference);
        if (!claim) {
          if (await this.giveUp(reference, walletId)) return givenBackKobo;
          // Claimed by a caller past its turn meanwhile: given back as any other part.
          claim = await this.findReference(reference);
          if (!claim) throw new Error(`reference ${reference} is claimed but cannot be read`);
        }
        if (claim.type === VOIDED) {
          // The end another call marked (or a part given up before its claim): read on only
          // if a part follows it.
          if (!(await this.findReference(reversalReference(reversal.id, n + 1)))) {
            return givenBackKobo;
          }
          continue;
        }
        if (claim.walletId !== walletId) {
          throw new Error(`reference ${reference} is not of wallet ${walletId}`);
        }
        if (await this.givenUpAndBack(claim)) continue;
        if (!(await this.postedEntry(claim))) {
          // Written before it was marked given up, it was kept: given back here, and counted.
          if (await this.giveUpClaimed(walletId, reference, claim.amountKobo)) {
            givenBackKobo += claim.amountKobo;
          }
          continue;
        }
        await this.postNow({
          walletId,
          type: 'REFUND',
          amountKobo: claim.amountKobo,
          reference: refundReference(reference),
          description: reversal.description,
        });
        givenBackKobo += claim.amountKobo;
      }
    });
  }

  /**
   * Whether a claimed debit was given up; one written after it was, by a writer that stopped
   * before giving it back, is given back here.
   */
  private async givenUpAndBack(claim: ReferenceRecord): Promise<boolean> {
    if (!(await this.isGivenUp(claim._id))) return false;
    if (await this.postedEntry(claim)) {
      await this.postNow(givenUpRefund(claim.walletId, claim._id, claim.amountKobo));
    }
    return true;
  }

  /** What parts 1..`parts` of a reversal keep, read from the ledger (by `_id`). */
  private async keptOfParts(walletId: string, reversalId: string, parts: number) {
    const kept = await Promise.all(
      Array.from({ length: parts }, async (_, i) => {
        const claim = await this.findReference(reversalReference(reversalId, i + 1));
        if (claim?.type !== 'DEBIT' || claim.walletId !== walletId) return 0;
        if (await this.isGivenUp(claim._id)) return 0;
        return (await this.postedEntry(claim)) ? claim.amountKobo : 0;
      }),
    );
    return kept.reduce((sum, part) => sum + part, 0);
  }

  /** What a claimed part of a reversal keeps: its amount once written, 0 once given up. */
  private async keptOfPart(claim: ReferenceRecord): Promise<number | 'stop'> {
    // Given up by a `payment.refund` before anyone claimed it: it never takes anything.
    if (claim.type === VOIDED) return 0;
    if (await this.givenUpAndBack(claim)) return 0;
    if (await this.postedEntry(claim)) return claim.amountKobo;
    return this.postPart({
      walletId: claim.walletId,
      type: 'DEBIT',
      amountKobo: claim.amountKobo,
      reference: claim._id,
      description: claim.description,
    });
  }

  /**
   * Posts a part of a reversal, as a debit's own posting (so that a write after it was given up
   * gives it back): its amount when it is written and kept; 0 when the wallet does not cover
   * it, and it is given up (`GivenUp`, then given back if a writer elsewhere wrote it before the
   * mark), or when it was given up meanwhile; 'stop' when another replica claimed it for another
   * amount.
   */
  private async postPart(part: PostRequest): Promise<number | 'stop'> {
    try {
      await this.postNow(part, true);
      return part.amountKobo;
    } catch (err) {
      if (!(err instanceof WaybillError)) throw err;
      if (err.type === 'CONFLICT') {
        return (await this.isGivenUp(part.reference)) ? 0 : 'stop';
      }
      if (err.type !== 'UNPROCESSABLE') throw err;
    }
    await this.giveUpClaimed(part.walletId, part.reference, part.amountKobo);
    return 0;
  }

  /** Claims a debit's reference so that no debit is ever posted under it: true when this did. */
  private giveUp(reference: string, walletId: string): Promise<boolean> {
    const now = new Date();
    const record: ReferenceRecord = {
      _id: reference,
      walletId,
      type: VOIDED,
      amountKobo: 0,
      fromSequence: 0,
      checkedThrough: 0,
      entrySequence: null,
      description: null,
      createdAt: now,
      updatedAt: now,
    };
    return insertOnce(() => this.m.Reference.create(record));
  }

  /** Whether a posting under `reference` is written. */
  async isPosted(reference: string): Promise<boolean> {
    const claim = await this.findReference(reference);
    return claim !== null && claim.type !== VOIDED && (await this.postedEntry(claim)) !== null;
  }

  /** The claim of a reference, if it was ever made. */
  private findReference(reference: string): Promise<ReferenceRecord | null> {
    return this.m.Reference.findById(reference).lean<ReferenceRecord>();
  }

  /**
   * Walks a wallet's chain by `_id` from where the claim's reference cannot yet be to its end:
   * its entry when it was posted there, else the last entry (the next one goes after it).
   */
  private async walk(
    claim: ReferenceRecord,
    from: { sequence: number; previous: EntryRecord | null },
  ): Promise<{ posted: EntryRecord } | { posted: null; last: EntryRecord | null }> {
    let { previous } = from;
    for (let sequence = from.sequence; ; sequence++) {
      const found = await this.entry(claim.walletId, sequence);
      if (!found) return { posted: null, last: previous };
      if (found.reference === claim._id) return { posted: found };
      previous = found;
    }
  }

  /**
   * The entry a claimed reference was posted as, or null while it is not (refused, or under
   * way). `remember`: a walk that did not meet it raises the claim's `checkedThrough` to the
   * last entry read (as a refused posting does), so that a caller that asks again (the repair
   * sweep, every minute for a day) reads only what was posted since.
   */
  private async postedEntry(
    claim: ReferenceRecord,
    { remember = false } = {},
  ): Promise<EntryRecord | null> {
    if (claim.entrySequence != null) return this.entry(claim.walletId, claim.entrySequence);
    const start = { sequence: claim.checkedThrough + 1, previous: null };
    const walked = await this.walk(claim, start);
    if (walked.posted) return walked.posted;
    if (remember && walked.last) {
      await this.m.Reference.updateOne(
        { _id: claim._id },
        { $max: { checkedThrough: walked.last.sequence } },
      );
    }
    return null;
  }

  /**
   * Posts the entry a reference names, once. Meeting the reference on the walk means it was
   * posted (by a concurrent or a crashed earlier request); otherwise the next entry is inserted
   * after the last one, and losing that insert to another writer means walking on from there.
   * 422 when the balance does not cover a debit; 409 when the reference was used for another
   * posting, or when a refund gave the debit up while it was posting (then it is given back).
   */
  post(request: PostRequest): Promise<Posting> {
    // One posting to a wallet at a time in this process (libs/turns): the entry's insert still
    // decides between replicas.
    return this.turns.run(request.walletId, () => this.postNow(request, request.type === 'DEBIT'));
  }

  /** Whether a refund gave up the debit of this reference (`refundDebit`). */
  private async isGivenUp(reference: string): Promise<boolean> {
    return (await this.m.GivenUp.findById(reference).lean()) !== null;
  }

  /**
   * Posts as `post` describes. With `ownDebit` (a debit's own posting), whether the debit was
   * given up is read once its entry is written or found, alongside the writes that follow: a
   * refund that gave it up while it was under way walked the chain after giving it up, and met
   * the entry unless it was written later, when this read sees the mark. Given up, it is given
   * back under the refund's reference (once, whoever of the two writes it) and refused (409), as
   * a debit given up before its claim is.
   */
  private async postNow(request: PostRequest, ownDebit = false): Promise<Posting> {
    const settle = async (posting: Posting, writes?: Promise<void>): Promise<Posting> => {
      const [, givenUp] = await Promise.all([
        writes,
        ownDebit && this.isGivenUp(request.reference),
      ]);
      if (!givenUp) return posting;
      const { walletId, reference, amountKobo } = request;
      await this.postNow(givenUpRefund(walletId, reference, amountKobo));
      throw conflict(givenUpDebit(reference));
    };
    const claim = await this.claim(request);
    if (claim.entrySequence != null) {
      const posted = await this.entry(claim.walletId, claim.entrySequence);
      if (posted) return settle({ entry: toLedgerEntry(posted), replayed: true });
    }
    const signed = signedAmount(request.type, request.amountKobo);
    let position = {
      sequence: claim.checkedThrough + 1,
      previous: await this.entry(claim.walletId, claim.checkedThrough),
    };
    for (;;) {
      const walked = await this.walk(claim, position);
      if (walked.posted) {
        return settle(
          { entry: toLedgerEntry(walked.posted), replayed: true },
          this.recordPosted(claim._id, walked.posted.sequence),
        );
      }
      const sequence = (walked.last?.sequence ?? 0) + 1;
      const next = nextBalance(claim.walletId, walked.last?.balanceKobo ?? 0, signed);
      if (!next.ok) {
        // Remembered so that a retry does not read these entries again.
        await this.m.Reference.updateOne(
          { _id: claim._id },
          { $max: { checkedThrough: sequence - 1 } },
        );
        throw unprocessable(INSUFFICIENT_BALANCE);
      }
      const record: EntryRecord = {
        _id: entryId(claim.walletId, sequence),
        walletId: claim.walletId,
        sequence,
        type: request.type,
        amountKobo: signed,
        balanceKobo: next.balanceKobo,
        reference: claim._id,
        description: claim.description ?? null,
        ...(claim.postedBy == null ? {} : { postedBy: claim.postedBy }),
        createdAt: new Date(),
      };
      if (!(await insertOnce(() => this.m.Entry.create(record)))) {
        // Another writer took this sequence: read its entry and walk on from there.
        position = { sequence, previous: walked.last };
        continue;
      }
      const recorded = async () => {
        await this.recordPosted(claim._id, sequence);
        await this.advanceHead(claim.walletId, sequence);
      };
      return settle({ entry: toLedgerEntry(record), replayed: false }, recorded());
    }
  }

  /**
   * Recomputes every wallet from its entries (in order of wallet and sequence; a scan, for
   * operators), checks each head does not run ahead of its chain and each posted reference
   * points at its entry (as the scan found it; read by `_id` only when it did not). Money may
   * move while it runs: a head ahead of what the scan read is a problem only if the entry it
   * names is missing. A debit its refund gave up, written and not given back, is reported
   * `UNREFUNDED` (`keptAfterGivenUp`). With `stopAt` (a request's deadline), the scan stops there
   * with a 503 rather than run on for nobody.
   */
  async verify(maxProblems = 1000, stopAt?: number): Promise<LedgerReport> {
    const audit = new LedgerAudit(maxProblems);
    const lastSequence = new Map<string, number>();
    const cursor = this.m.Entry.find({}).sort({ walletId: 1, sequence: 1 }).lean().cursor();
    let read = 0;
    for await (const entry of cursor) {
      audit.add(entry as EntryRecord);
      lastSequence.set(entry.walletId, entry.sequence);
      if (++read % VERIFY_DEADLINE_EVERY === 0 && stopAt !== undefined && Date.now() >= stopAt) {
        await cursor.close();
        throw serviceUnavailable(
          `The ledger verify stopped at the request's deadline, ${read} entries read: the ledger is too large to verify within one request; run \`waybill ledger verify\`, which is held to no time limit`,
        );
      }
    }
    audit.finish();
    // What the scan cannot see, found after it and listed before its own: a head or a reference
    // naming the wrong entry, a debit kept after it was given up, each a fix to make; the scan's
    // may be many that stay (a pay-on-delivery settled before cash accounts: UNMATCHED).
    const problems: LedgerProblem[] = [];
    for await (const head of this.m.Wallet.find({}).lean().cursor()) {
      const last = lastSequence.get(head._id) ?? 0;
      // Ahead of the scan: posted since, unless the entry it names is not there now either.
      if (head.sequence > last && !(await this.entry(head._id, head.sequence))) {
        problems.push({
          walletId: head._id,
          kind: 'MISMATCH',
          sequence: head.sequence,
          detail: `the head names entry ${head.sequence}, the last entry is ${last}`,
        });
      }
    }
    for await (const ref of this.m.Reference.find({ entrySequence: { $ne: null } })
      .lean()
      .cursor()) {
      // Found by the scan: no read. Else posted since (or a problem): its entry read by `_id`.
      const named = entryId(ref.walletId, ref.entrySequence as number);
      if (audit.postedAs(ref._id) === named) continue;
      const entry = await this.entry(ref.walletId, ref.entrySequence as number);
      if (entry?.reference !== ref._id) {
        problems.push({
          walletId: ref.walletId,
          kind: 'MISMATCH',
          sequence: ref.entrySequence as number,
          detail: `reference ${ref._id} names this entry, which holds ${entry ? entry.reference : 'nothing'}`,
        });
      }
    }
    for await (const mark of this.m.GivenUp.find({}).lean().cursor()) {
      const kept = await this.keptAfterGivenUp(mark._id, audit);
      if (kept) problems.push(kept);
    }
    const problemCount = problems.length + audit.problemCount;
    return {
      clean: problemCount === 0,
      wallets: audit.wallets,
      cashAccounts: audit.cashAccounts,
      entries: audit.entries,
      problemCount,
      problems: [...problems, ...audit.problems].slice(0, maxProblems),
      checkedAt: new Date().toISOString(),
    };
  }

  /**
   * Gives back, once each, the debits their refunds gave up that were written with nothing given
   * back (what `verify` reports as `UNREFUNDED`): what a posting killed between its entry and
   * its read of the mark leaves. Run by the payment sweep, so that the money of a request the
   * order service undid comes back without an operator. A debit written less than
   * `GIVEN_UP_GRACE_MS` ago is left to its own posting, which gives it back itself; either way
   * the refund's reference makes it once. A mark with nothing left to do is settled and not
   * read again. Answers how many debits it gave back.
   */
  async repairGivenUp(
    options: { stopping?: () => boolean; onError?: (reference: string, err: unknown) => void } = {},
  ): Promise<number> {
    let givenBack = 0;
    const now = new Date();
    const recheckLater = (id: string) =>
      this.m.OpenGivenUp.updateOne(
        { _id: id },
        { $set: { recheckAt: new Date(Date.now() + GIVEN_UP_RECHECK_MS) } },
      );
    // The open marks only, each looked at again only once its recheck is due.
    const due = this.m.OpenGivenUp.find({ recheckAt: { $lte: now } })
      .sort({ recheckAt: 1 })
      .lean<{ _id: string; recheckAt: Date }[]>()
      .cursor();
    for await (const open of due) {
      if (options.stopping?.()) break;
      try {
        const mark = await this.m.GivenUp.findById(open._id).lean();
        if (!mark) {
          // Listed by a give-up that stopped before its mark: once it surely is not coming. A
          // mark made while the entry was dropped is listed again (by its give-up, or here).
          const stale = now.getTime() - new Date(open.recheckAt).getTime() > GIVEN_UP_RECHECK_MS;
          if (!stale) continue;
          await this.m.OpenGivenUp.deleteOne({ _id: open._id });
          const late = await this.m.GivenUp.findById(open._id).lean();
          if (late && !late.settledAt) {
            await insertOnce(() =>
              this.m.OpenGivenUp.create({ _id: open._id, recheckAt: new Date() }),
            );
          }
          continue;
        }
        const outcome = mark.settledAt
          ? 'settled'
          : await this.turns.run(mark.walletId, () => this.repairOne(mark));
        if (outcome === 'given back') givenBack += 1;
        if (outcome === 'pending') {
          await recheckLater(mark._id);
        } else {
          // Settled on the mark too: a node of the version before reads it there.
          await this.m.GivenUp.updateOne({ _id: mark._id }, { $set: { settledAt: new Date() } });
          await this.m.OpenGivenUp.deleteOne({ _id: mark._id });
        }
      } catch (err) {
        // One mark that cannot be repaired (a 409 on its refund's reference) holds up no other,
        // and is tried again a minute later, not at every sweep of every replica.
        options.onError?.(open._id, err);
        await recheckLater(open._id).catch(() => undefined);
      }
    }
    return givenBack;
  }

  /**
   * Lists the marks not settled that were made before the open list, or by a node of the
   * version before (libs/backfills): what the repair sweep would otherwise never read again.
   */
  async listOpenGivenUp(pass: BackfillPass): Promise<void> {
    await runPass(pass, passRecordsIn(this.m.LedgerPass), OPEN_GIVEN_UP_LISTED, async (since) => {
      const unlisted = this.m.GivenUp.find({
        ...unrecordedSince('createdAt', since),
        settledAt: null,
      })
        .lean()
        .cursor();
      for await (const mark of unlisted) {
        const recheckAt = mark.recheckAt ?? mark.createdAt;
        await insertOnce(() => this.m.OpenGivenUp.create({ _id: mark._id, recheckAt }));
      }
    });
  }

  private async repairOne(mark: {
    _id: string;
    walletId: string;
    createdAt: Date;
  }): Promise<'given back' | 'settled' | 'pending'> {
    const debit = await this.findReference(mark._id);
    if (debit?.type !== 'DEBIT' || debit.walletId !== mark.walletId) return 'settled';
    const entry = await this.postedEntry(debit, { remember: true });
    if (!entry) {
      const old = Date.now() - mark.createdAt.getTime() > GIVEN_UP_UNWRITTEN_MS;
      return old ? 'settled' : 'pending';
    }
    if (Date.now() - entry.createdAt.getTime() < GIVEN_UP_GRACE_MS) return 'pending';
    if (await this.repairedByOperator(mark._id, mark.walletId)) return 'settled';
    const posting = await this.postNow(givenUpRefund(mark.walletId, mark._id, debit.amountKobo));
    return posting.replayed ? 'settled' : 'given back';
  }

  /**
   * Whether an operator gave back the debit `reference` of `walletId` under its refund's admin
   * reference, as repairs were made before decision 121: counted only when credited to that
   * wallet (a credit to another gave this one nothing).
   */
  private async repairedByOperator(reference: string, walletId: string): Promise<boolean> {
    return (await this.operatorsRefund(reference, walletId)) !== null;
  }

  /** The entry of an operator's credit of `walletId` under the debit's refund's admin reference. */
  private async operatorsRefund(reference: string, walletId: string) {
    const claim = await this.findReference(adminCreditReference(refundReference(reference)));
    if (claim?.walletId !== walletId || claim.type === VOIDED) return null;
    return this.postedEntry(claim);
  }

  /**
   * A debit given up by its refund (`ledger_given_up`) that is written with nothing given back:
   * what a posting killed between its entry and its read of the mark leaves, or one on a replica
   * of the version before, which reads no mark (decision 115's "Left"). Money taken for a request
   * the order service undid, which nothing else would ever report. Read from the scan: a debit
   * it did not meet was written since, if at all, and is left to its own posting, as is one
   * written less than `GIVEN_UP_GRACE_MS` ago. An operator's credit under the refund's reference
   * counts as the refund (decision 121). Reads by `_id` only, and only for a debit the scan met
   * without its refund.
   */
  private async keptAfterGivenUp(
    reference: string,
    audit: LedgerAudit,
  ): Promise<LedgerProblem | null> {
    const posted = audit.postedAs(reference);
    const refund = refundReference(reference);
    if (posted === undefined || audit.postedAs(refund) !== undefined) return null;
    const entry = await this.m.Entry.findById(posted).lean<EntryRecord>();
    if (entry?.type !== 'DEBIT' || Date.now() - entry.createdAt.getTime() < GIVEN_UP_GRACE_MS) {
      return null;
    }
    // Given back since the scan, or by an operator before decision 121.
    if (await this.isPosted(refund)) return null;
    if (await this.repairedByOperator(reference, entry.walletId)) return null;
    const naira = formatNaira(-entry.amountKobo);
    return {
      walletId: entry.walletId,
      kind: 'UNREFUNDED',
      sequence: entry.sequence,
      detail: `debit ${reference} took NGN ${naira} after its refund gave it up (its request was undone), and nothing gave it back: credit it back once with \`waybill wallet credit ${entry.walletId} --amount ${naira} --reference ${refund}\` (or POST /admin/users/${entry.walletId}/wallet/credit)`,
    };
  }
}

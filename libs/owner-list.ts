import { Schema, type Connection } from 'mongoose';
import { passRecordsIn, runPass, type BackfillPass } from './backfills';
import { deleteManyById, insertAll, insertOnce, raiseById } from './mongo';
import { Turns } from './turns';

/**
 * What one owner (a user) has, in the order it was added, read back by `_id` alone: entry
 * `<ownerId>:<n>` names the n-th item. FerretDB 1.24 on SQLite pushes down only `_id`
 * equality, so a find by `userId` decodes every document of the collection (≈ 45 µs each:
 * 45 s a page at a million); a page of this list costs the same at ten documents or ten
 * million (docs/performance.md "Cost as data grows").
 *
 * The entries are appended as a wallet's ledger is (decision 16): the insert of the next
 * number is the lock. An item is added once: its claim, `<ownerId>:<itemId>`, records the
 * number from which its entry may be, so that a retry walks from there and finds it rather
 * than adding it twice. The head records the last number seen, a hint that may lag.
 *
 * A list whose items close for good (a package deleted or taken) keeps a floor in its head:
 * every entry below it names an item that was closed when a reader looked, so reads stop there
 * and cost what the open items and the closed ones above them cost, not the whole history. An
 * item that opens again is added again under a tag (`add(…, tag)`), above any floor.
 */
const plain = { versionKey: false } as const;

const entrySchema = new Schema(
  {
    _id: { type: String, required: true },
    ownerId: { type: String, required: true },
    n: { type: Number, required: true },
    itemId: { type: String, required: true },
    at: { type: Date, required: true },
    tag: { type: String },
  },
  plain,
);
const headSchema = new Schema(
  {
    _id: { type: String, required: true },
    n: { type: Number, required: true },
    floor: { type: Number },
    /** On the head that marks a backfill's pass (libs/backfills): when the pass began. */
    startedAt: { type: Date },
  },
  plain,
);
const claimSchema = new Schema(
  { _id: { type: String, required: true }, from: { type: Number, required: true } },
  plain,
);

/** The collections of one list, named `<name>`, `<name>_heads` and `<name>_claims`. */
export function defineOwnerListModels(connection: Connection, name: string) {
  return {
    Entry: connection.model(`${name}:entry`, entrySchema, name),
    Head: connection.model(`${name}:head`, headSchema, `${name}_heads`),
    Claim: connection.model(`${name}:claim`, claimSchema, `${name}_claims`),
  };
}

export type OwnerListModels = ReturnType<typeof defineOwnerListModels>;

/** A list's models among a service's, one level deep: `<P>Entry`, `<P>Head`, `<P>Claim`. */
export type NamedOwnerListModels<P extends string> = Record<`${P}Entry`, OwnerListModels['Entry']> &
  Record<`${P}Head`, OwnerListModels['Head']> &
  Record<`${P}Claim`, OwnerListModels['Claim']>;

/**
 * The models of list `name` under keys a service spreads into its own models (tests and the
 * index build walk one level of them).
 */
export function defineNamedOwnerListModels<P extends string>(
  connection: Connection,
  name: string,
  prefix: P,
): NamedOwnerListModels<P> {
  const { Entry, Head, Claim } = defineOwnerListModels(connection, name);
  return {
    [`${prefix}Entry`]: Entry,
    [`${prefix}Head`]: Head,
    [`${prefix}Claim`]: Claim,
  } as NamedOwnerListModels<P>;
}

/** One entry of an owner's list: its number, its item, when it was added. */
export interface OwnerListEntry {
  n: number;
  itemId: string;
  at: Date;
  /**
   * Names a further entry of the same item, as its list means it (a package's
   * `returned:<deliveryId>:<take>`, a status's version); `…:stored-late` and `…:lifted:<n>`
   * are added by this module. None for the first.
   */
  tag?: string;
}

interface EntryRecord extends OwnerListEntry {
  _id: string;
  ownerId: string;
}

export const ownerListEntryId = (ownerId: string, n: number) => `${ownerId}:${n}`;
export const ownerListClaimId = (ownerId: string, itemId: string, tag?: string) =>
  tag === undefined ? `${ownerId}:${itemId}` : `${ownerId}:${itemId}#${tag}`;

/** Closed entries above a live one that a read passes over before it lifts the live ones. */
export const LIFT_AFTER_CLOSED = 50;

/**
 * What a whole read of a list (every entry from the newest down to the floor) lets the next
 * one skip. Without a lift, the floor rises to the lowest live entry (one past the newest read
 * when none is). When more closed entries lie above live ones than `LIFT_AFTER_CLOSED` and
 * than there are live ones, the live items are to be added again at the top, and then the
 * floor passes everything read: each closed entry is read a bounded number of times.
 */
export function afterRead(read: { n: number; live: boolean }[]): {
  floor: number | undefined;
  lift: boolean;
  /** The floor without the lift (one left for a later read). */
  unlifted: number | undefined;
} {
  if (read.length === 0) return { floor: undefined, lift: false, unlifted: undefined };
  let lowestLive = Infinity;
  let newest = -Infinity;
  let live = 0;
  for (const r of read) {
    if (r.live) live++;
    if (r.live && r.n < lowestLive) lowestLive = r.n;
    if (r.n > newest) newest = r.n;
  }
  const closedAbove = read.filter((r) => !r.live && r.n > lowestLive).length;
  const lift = closedAbove >= Math.max(LIFT_AFTER_CLOSED, live);
  const unlifted = Math.min(lowestLive, newest + 1);
  return { floor: lift ? newest + 1 : unlifted, lift, unlifted };
}

/** A stored item as a backfill lists it: whose list, when stored, and its entry's tag if any. */
export interface StoredItem {
  ownerId: string;
  itemId: string;
  at: Date;
  tag?: string;
}

/** Stored documents as a list's `backfill` reads them, oldest first: each one's entries (none skips it). */
export async function* listedAs<T>(
  stored: AsyncIterable<T>,
  entries: (doc: T) => StoredItem | StoredItem[],
) {
  for await (const doc of stored) {
    const items = entries(doc);
    yield* Array.isArray(items) ? items : [items];
  }
}

/** What a store reads of its items for `backfill`: `{_id, userId, createdAt}`. */
export const ownedItems = (
  stored: AsyncIterable<{ _id: unknown; userId: string; createdAt: Date }>,
) =>
  listedAs(stored, (item) => ({
    ownerId: item.userId,
    itemId: String(item._id),
    at: item.createdAt,
  }));

/**
 * How long an entry may wait for its item to be stored (the entry is written first, so that a
 * stored item is always listed) before a read of live items takes it for a store that died.
 */
export const PENDING_ITEM_MS = 10 * 60_000;

/** Whether an entry whose item is not stored may still see it stored (`readLive`'s judges). */
const awaitsItem = (entry: OwnerListEntry, now: number) =>
  now - entry.at.getTime() < PENDING_ITEM_MS;

/**
 * What a read makes of an entry whose item it read by `_id` (`found`): live and listed when
 * `listed` says so; live but not listed while the item may still come to be listed (`waiting`:
 * by default, not stored yet) and the entry is younger than `PENDING_ITEM_MS`; else closed.
 */
export function judgeItem<T>(
  found: T | null,
  entry: OwnerListEntry,
  now: number,
  listed: (item: T) => boolean,
  waiting = found === null,
): { live: boolean; item?: T } {
  if (found !== null && listed(found)) return { live: true, item: found };
  return { live: waiting && awaitsItem(entry, now) };
}

/** The head that marks a list filled from the documents stored before it existed. */
const BACKFILLED = '$backfilled';

/** Stored items a backfill adds at once, a few writes for each owner among them. */
const BACKFILL_BATCH = 500;

/** Entries read at once when a page is read from the newest back. */
const READ_WIDTH = 50;

/** Entries read at once for a short page, so that `limit=1` does not walk one at a time. */
const MIN_READ_WIDTH = 10;

/** Appends to one owner's list take turns in this process: see libs/turns. */
const appends = new Turns();

export class OwnerList {
  /**
   * `turns`: the appends this list's take turns with; every list of a process shares one by
   * default (a test gives another to play a second replica).
   */
  constructor(
    private readonly models: () => OwnerListModels,
    private readonly turns: Turns = appends,
  ) {}

  /** The list whose models a service keeps as `<prefix>Entry`, `<prefix>Head`, `<prefix>Claim`. */
  static named<P extends string>(models: () => NamedOwnerListModels<P>, prefix: P): OwnerList {
    return new OwnerList(() => {
      // TypeScript does not narrow an index by a generic template key: the type says it is there.
      const m = models() as unknown as Record<string, unknown>;
      return {
        Entry: m[`${prefix}Entry`],
        Head: m[`${prefix}Head`],
        Claim: m[`${prefix}Claim`],
      } as OwnerListModels;
    });
  }

  private get m() {
    return this.models();
  }

  private async entry(ownerId: string, n: number): Promise<EntryRecord | null> {
    if (n < 1) return null;
    return this.m.Entry.findById(ownerListEntryId(ownerId, n)).lean<EntryRecord>();
  }

  /**
   * The head's hint of the last number (0 for none) and the list's floor (1 for none). The
   * floor only rises past entries there were, so the last number is at least the one below
   * it: a hint that lags (its raise lost) cannot hand out again a number whose entry was
   * deleted (`forget`), where an entry would be below every read.
   */
  private async head(ownerId: string): Promise<{ hint: number; floor: number }> {
    const head = await this.m.Head.findById(ownerId).lean();
    const floor = Math.max(1, head?.floor ?? 1);
    return { hint: Math.max(head?.n ?? 0, floor - 1), floor };
  }

  /** The number of the owner's last entry, from the head's hint forward while entries exist. */
  private async last(ownerId: string): Promise<{ length: number; floor: number }> {
    const { hint, floor } = await this.head(ownerId);
    let n = hint;
    while (await this.entry(ownerId, n + 1)) n++;
    if (n > hint) this.raiseHead(ownerId, { n }).catch(() => undefined);
    return { length: n, floor };
  }

  /** The number of the owner's last entry. */
  async length(ownerId: string): Promise<number> {
    return (await this.last(ownerId)).length;
  }

  /**
   * Moves the head's hint or floor up only; a lost update leaves it lower, which is harmless:
   * either is a bound that a stale copy can only understate.
   */
  private async raiseHead(ownerId: string, to: { n: number } | { floor: number }): Promise<void> {
    await raiseById(this.m.Head, ownerId, to);
  }

  /**
   * Adds the item at the end of the owner's list, once however often it is called, and returns
   * its entry. With a tag it adds the item again, once per tag, whatever entries it has.
   */
  add(ownerId: string, itemId: string, at: Date, tag?: string): Promise<OwnerListEntry> {
    return this.turns.run(this.appendKey(ownerId), () => this.addNow(ownerId, itemId, at, tag));
  }

  /** One append to each of an owner's lists at a time in this process (libs/turns). */
  private appendKey(ownerId: string): string {
    return `${this.m.Entry.collection.collectionName}:${ownerId}`;
  }

  private async addNow(
    ownerId: string,
    itemId: string,
    at: Date,
    tag?: string,
  ): Promise<OwnerListEntry> {
    const claimId = ownerListClaimId(ownerId, itemId, tag);
    const fresh = { _id: claimId, from: (await this.head(ownerId)).hint + 1 };
    const claimedNow = await insertOnce(() => this.m.Claim.create(fresh));
    const claim = claimedNow ? fresh : await this.m.Claim.findById(claimId).lean();
    if (!claim) throw new Error(`the claim of ${claimId} is taken but cannot be read`);
    // No entry under this claim can be before `from`: the claim came first. A claim made just
    // now had no entry when it was made, so each number is tried before it is read: only a
    // number taken is read (another item's, or this one's, added by a twin that found the claim).
    let unread = claimedNow;
    for (let n = claim.from; ; n++) {
      if (!unread) {
        const found = await this.entry(ownerId, n);
        if (found?.itemId === itemId && found.tag === tag) return found;
        if (found) continue;
      }
      const record: EntryRecord = { _id: ownerListEntryId(ownerId, n), ownerId, n, itemId, at };
      if (tag !== undefined) record.tag = tag;
      if (await insertOnce(() => this.m.Entry.create(record))) {
        await this.raiseHead(ownerId, { n });
        return record;
      }
      // Another writer took this number: its entry is read on the next turn.
      unread = false;
      n--;
    }
  }

  /**
   * Adds an item about to be stored, before it is (`add`, under `tag` when given: an item about to
   * be stored again). When its entry is older than half
   * of `PENDING_ITEM_MS` (a retry of a store that died), a read may have let it go: a fresh
   * entry, which waits for the item, is added too, under `…stored-late`; and when that one is
   * as old (a third try, a read having let both go), under `…stored-late:2`, and so on.
   */
  async addBeforeStoring(ownerId: string, itemId: string, tag?: string): Promise<void> {
    const late = tag === undefined ? 'stored-late' : `${tag}:stored-late`;
    for (let retry = 0; ; retry++) {
      const retryTag = retry === 0 ? tag : retry === 1 ? late : `${late}:${retry}`;
      const entry = await this.add(ownerId, itemId, new Date(), retryTag);
      if (Date.now() - entry.at.getTime() < PENDING_ITEM_MS / 2) return;
    }
  }

  /**
   * Adds the items at the end of the owner's list in the order given, each once as `add` does,
   * in five operations when none was added before and nobody else adds to the list meanwhile
   * (the usual case). Otherwise it walks the list once from the lowest number its items' claims
   * allow, passing the entries they have already, and appends the others after the last entry.
   */
  addAll(ownerId: string, items: { itemId: string; at: Date; tag?: string }[]): Promise<void> {
    return this.turns.run(this.appendKey(ownerId), () => this.addAllNow(ownerId, items));
  }

  private async addAllNow(
    ownerId: string,
    items: { itemId: string; at: Date; tag?: string }[],
  ): Promise<void> {
    const pending = [...new Map(items.map((i) => [`${i.itemId}#${i.tag}`, i])).values()];
    if (pending.length === 0) return;
    const from = (await this.head(ownerId)).hint + 1;
    const claims = pending.map((i) => ({ _id: ownerListClaimId(ownerId, i.itemId, i.tag), from }));
    // No entry of an item can be below its claim's `from`: the claim came first.
    let n = (await this.claimAll(claims)) ? from : await this.lowestClaimed(claims);
    for (;;) {
      const entries = pending.map(({ itemId, at, tag }, i): EntryRecord => {
        const number = n + i;
        const entry: EntryRecord = {
          _id: ownerListEntryId(ownerId, number),
          ownerId,
          n: number,
          itemId,
          at,
        };
        if (tag !== undefined) entry.tag = tag;
        return entry;
      });
      // In order: a number another writer took stops the rest, found or added on the next turn.
      if (await insertOnce(() => this.m.Entry.insertMany(entries, { ordered: true }))) {
        await this.raiseHead(ownerId, { n: n + pending.length - 1 });
        return;
      }
      // Past the entries there are, dropping the items found (a retry stops once all are).
      for (;;) {
        const found = await this.entry(ownerId, n);
        if (!found) break;
        const i = pending.findIndex((p) => p.itemId === found.itemId && p.tag === found.tag);
        if (i >= 0) pending.splice(i, 1);
        if (pending.length === 0) return;
        n++;
      }
    }
  }

  /** Adds items of many owners, each owner's in the order given (`addAll`), owner by owner. */
  async addByOwner(items: StoredItem[]): Promise<void> {
    const byOwner = new Map<string, { itemId: string; at: Date; tag?: string }[]>();
    for (const { ownerId, itemId, at, tag } of items) {
      const own = byOwner.get(ownerId) ?? [];
      own.push({ itemId, at, tag });
      byOwner.set(ownerId, own);
    }
    for (const [ownerId, own] of byOwner) await this.addAll(ownerId, own);
  }

  /**
   * Inserts the claims; false when any was there already (a retry, or an item twice). Any
   * other refusal throws, whichever claim it was of (the driver's code is the first's only).
   */
  private claimAll(claims: { _id: string; from: number }[]): Promise<boolean> {
    return insertAll(this.m.Claim, claims);
  }

  /** The lowest `from` of these claims, each read by `_id`. */
  private async lowestClaimed(claims: { _id: string; from: number }[]): Promise<number> {
    const stored = await Promise.all(claims.map((c) => this.m.Claim.findById(c._id).lean()));
    return Math.min(...stored.map((c, i) => c?.from ?? claims[i].from));
  }

  /** The entries `newest`, `newest - 1`, … down to `lowest`, at most `count` of them. */
  private async entriesDown(ownerId: string, newest: number, lowest: number, count: number) {
    const numbers: number[] = [];
    for (let n = newest; n >= lowest && numbers.length < count; n--) numbers.push(n);
    const found = await Promise.all(numbers.map((n) => this.entry(ownerId, n)));
    return found.filter((e): e is EntryRecord => e !== null);
  }

  /** Item ids newest first: `limit` of them after skipping `offset`. */
  async page(ownerId: string, { offset, limit }: { offset: number; limit: number }) {
    const { length, floor } = await this.last(ownerId);
    const entries = await this.entriesDown(ownerId, length - offset, floor, limit);
    return entries.map((e) => e.itemId);
  }

  /** Every item id from the newest down to the floor, a batch at a time. */
  async *newestFirst(ownerId: string): AsyncGenerator<string[]> {
    const { length, floor } = await this.last(ownerId);
    for (let newest = length; newest >= floor; newest -= READ_WIDTH) {
      yield (await this.entriesDown(ownerId, newest, floor, READ_WIDTH)).map((e) => e.itemId);
    }
  }

  /**
   * The oldest entries the list still reads: from its floor up, `most` at most. With
   * `forget` and `raiseFloor`, what a sweep that deletes the oldest items walks (the webhook
   * service's retention), by `_id` alone. Entries missing just above the floor were deleted by
   * a sweep whose raise of the floor did not land (it stopped in between, or the write was lost
   * to an append's raise of the hint in the same document, decision 99): they are passed, a
   * batch at a time, and the floor raised past them, so that the sweep does not find the list
   * empty there and stop for good.
   */
  async oldestFirst(ownerId: string, most: number): Promise<OwnerListEntry[]> {
    const { length, floor } = await this.last(ownerId);
    let from = floor;
    while (from <= length) {
      const numbers: number[] = [];
      for (let n = from; n <= length && numbers.length < most; n++) numbers.push(n);
      const found = (await Promise.all(numbers.map((n) => this.entry(ownerId, n)))).filter(
        (e): e is EntryRecord => e !== null,
      );
      if (found.length > 0) {
        if (found[0].n > floor) await this.raiseFloor(ownerId, found[0].n);
        return found;
      }
      from = numbers[numbers.length - 1] + 1;
    }
    if (from > floor) await this.raiseFloor(ownerId, from);
    return [];
  }

  /**
   * Reads stop below entry `floor` from now on. A lost update leaves them reading more, which
   * costs the reads; entries deleted below the floor meant (`forget`) are passed by
   * `oldestFirst`, which raises it again.
   */
  async raiseFloor(ownerId: string, floor: number): Promise<void> {
    await this.raiseHead(ownerId, { floor });
  }

  /**
   * Deletes entries below the floor with their items' claims (an item added again later gets
   * a new entry at the top); how many documents there were.
   */
  async forget(ownerId: string, entries: readonly OwnerListEntry[]): Promise<number> {
    const [removed, claims] = await Promise.all([
      deleteManyById(
        this.m.Entry,
        entries.map((e) => ownerListEntryId(ownerId, e.n)),
      ),
      deleteManyById(
        this.m.Claim,
        entries.map((e) => ownerListClaimId(ownerId, e.itemId, e.tag)),
      ),
    ]);
    return removed + claims;
  }

  /**
   * The items still live, newest entry first, for a list whose items close for good or open
   * again only by being added again with a tag. `judge` says of each item's newest entry
   * whether it is live and, when there is one, the item; older entries of an item are
   * superseded. A read that reaches the floor then keeps the next one short (`afterRead`): it
   * raises the floor, and first adds the live items again at the top when closed entries have
   * piled up above them. With `wanted`, the read stops once it has that many items: a page of a
   * list whose live items are many (a status deliveries stay in) costs the page, not the list.
   */
  private async readLive<T>(
    ownerId: string,
    judge: (entries: OwnerListEntry[]) => Promise<{ live: boolean; item?: T }[]>,
    wanted = Infinity,
    skip = 0,
  ): Promise<T[]> {
    const { length, floor } = await this.last(ownerId);
    const seen = new Set<string>();
    const read: { n: number; live: boolean }[] = [];
    const live: OwnerListEntry[] = [];
    const items: T[] = [];
    if (wanted <= 0) return items;
    // Passed over, not kept: a deep page holds only its own items.
    let skipping = skip;
    // About a page at a time: each entry judged costs reads of its item.
    const width = Math.min(READ_WIDTH, Math.max(skip + wanted, MIN_READ_WIDTH));
    for (let newest = length; newest >= floor; newest -= width) {
      const entries = await this.entriesDown(ownerId, newest, floor, width);
      // An item's entries may share a batch (given back soon after it was taken).
      const latest: OwnerListEntry[] = [];
      for (const e of entries) {
        if (seen.has(e.itemId)) continue;
        seen.add(e.itemId);
        latest.push(e);
      }
      const judged = new Map((await judge(latest)).map((j, i) => [latest[i], j]));
      for (const entry of entries) {
        const verdict = judged.get(entry);
        read.push({ n: entry.n, live: verdict?.live ?? false });
        if (!verdict?.live) continue;
        live.push(entry);
        if (verdict.item === undefined) continue;
        if (skipping > 0) {
          skipping--;
          continue;
        }
        items.push(verdict.item);
        if (items.length >= wanted) {
          // The list below is not read: the floor stays, but what this read passed over is
          // passed over once, not by every read of the first page.
          await this.keepShort(ownerId, length, read, live, false).catch(() => undefined);
          return items;
        }
      }
    }
    await this.keepShort(ownerId, length, read, live, true).catch(() => undefined);
    return items;
  }

  /**
   * The items still live (`readLive`), each read by `_id` (`read`) and judged by `judgeItem`:
   * `listed` says which stored items are live, `waiting` (by default: not stored yet) which
   * may still come to be.
   */
  readLiveItems<T>(
    ownerId: string,
    read: (itemId: string) => Promise<T | null>,
    listed: (item: T) => boolean,
    options: {
      /** Items to answer at most. */
      wanted?: number;
      /** Live items to pass over first, newest first (a page's offset). */
      skip?: number;
      waiting?: (found: T | null, entry: OwnerListEntry) => boolean;
    } = {},
  ): Promise<T[]> {
    const now = Date.now();
    const judge = async (entries: OwnerListEntry[]) => {
      const found = await Promise.all(entries.map((e) => read(e.itemId)));
      return found.map((item, i) =>
        judgeItem(item, entries[i], now, listed, options.waiting?.(item, entries[i])),
      );
    };
    return this.readLive(ownerId, judge, options.wanted, options.skip);
  }

  /**
   * Raises the floor past what a whole read found closed, or lifts the live items read above
   * the closed ones (`afterRead`). A partial read (`whole` false) only lifts. A lift is left
   * for a later read when the list grew during this one: the lifted would go above items that
   * entered after them. Left undone, each only costs the next read what this one cost.
   */
  private async keepShort(
    ownerId: string,
    length: number,
    read: { n: number; live: boolean }[],
    live: OwnerListEntry[],
    whole: boolean,
  ) {
    const { floor, lift, unlifted } = afterRead(read);
    const lowestRead = read.reduce((lowest, r) => Math.min(lowest, r.n), Infinity);
    const lifting = lift && (await this.last(ownerId)).length === length;
    if (lifting) {
      // Oldest first, in one batch, so that the lifted keep their order; each keeps its `at`
      // (an entry still waiting for its item ages as the first did) and its tag (what the
      // item's entry meant).
      const lifted = [...live].reverse().map((e) => ({
        itemId: e.itemId,
        at: e.at,
        tag: e.tag === undefined ? `lifted:${e.n}` : `${e.tag}:lifted:${e.n}`,
      }));
      await this.addAll(ownerId, lifted);
    }
    const raised = lifting ? floor : unlifted;
    if (whole && raised !== undefined && raised > lowestRead) {
      await this.raiseHead(ownerId, { floor: raised });
    }
  }

  /**
   * Adds what was stored without being listed (libs/backfills): at the first start, everything
   * stored before this list existed; after a rolling update, what the replicas of the version
   * before stored since. `stored(since)` yields the items stored since then, oldest first.
   * Safe to run twice or on two replicas.
   */
  async backfill(pass: BackfillPass, stored: (since: Date | null) => AsyncIterable<StoredItem>) {
    await runPass(pass, passRecordsIn(this.m.Head, { n: 0 }), BACKFILLED, async (since) => {
      // A batch at a time, each owner's items of it in one `addAll`, in the order stored.
      let batch: StoredItem[] = [];
      for await (const item of stored(since)) {
        batch.push(item);
        if (batch.length === BACKFILL_BATCH) {
          await this.addByOwner(batch);
          batch = [];
        }
      }
      await this.addByOwner(batch);
    });
  }
}

import { Schema, type Connection } from 'mongoose';
import { insertOnce, isDuplicateKey } from './mongo';

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
 */
const plain = { versionKey: false } as const;

const entrySchema = new Schema(
  {
    _id: { type: String, required: true },
    ownerId: { type: String, required: true },
    n: { type: Number, required: true },
    itemId: { type: String, required: true },
    at: { type: Date, required: true },
  },
  plain,
);
const headSchema = new Schema(
  { _id: { type: String, required: true }, n: { type: Number, required: true } },
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

interface EntryRecord {
  _id: string;
  ownerId: string;
  n: number;
  itemId: string;
  at: Date;
}

export const ownerListEntryId = (ownerId: string, n: number) => `${ownerId}:${n}`;
export const ownerListClaimId = (ownerId: string, itemId: string) => `${ownerId}:${itemId}`;

/** What a store reads of its items for `backfill`: `{_id, userId, createdAt}`. */
export async function* ownedItems(
  stored: AsyncIterable<{ _id: unknown; userId: string; createdAt: Date }>,
) {
  for await (const item of stored) {
    yield { ownerId: item.userId, itemId: String(item._id), at: item.createdAt };
  }
}

/** The head that marks a list filled from the documents stored before it existed. */
const BACKFILLED = '$backfilled';

/** Entries read at once when a page is read from the newest back. */
const READ_WIDTH = 50;

export class OwnerList {
  constructor(private readonly models: () => OwnerListModels) {}

  private get m() {
    return this.models();
  }

  private async entry(ownerId: string, n: number): Promise<EntryRecord | null> {
    if (n < 1) return null;
    return this.m.Entry.findById(ownerListEntryId(ownerId, n)).lean<EntryRecord>();
  }

  private async hint(ownerId: string): Promise<number> {
    return (await this.m.Head.findById(ownerId).lean())?.n ?? 0;
  }

  /** The number of the owner's last entry: from the head's hint, forward while entries exist. */
  async length(ownerId: string): Promise<number> {
    const hint = await this.hint(ownerId);
    let n = hint;
    while (await this.entry(ownerId, n + 1)) n++;
    if (n > hint) this.advanceHead(ownerId, n).catch(() => undefined);
    return n;
  }

  /** Moves the head forward only; a lost update leaves it behind, which is harmless. */
  private async advanceHead(ownerId: string, n: number): Promise<void> {
    try {
      await this.m.Head.updateOne({ _id: ownerId }, { $max: { n } }, { upsert: true });
    } catch (err) {
      // Two first entries raced to create the head: the other one did.
      if (!isDuplicateKey(err)) throw err;
      await this.m.Head.updateOne({ _id: ownerId }, { $max: { n } });
    }
  }

  /** Adds the item at the end of the owner's list, once however often it is called. */
  async add(ownerId: string, itemId: string, at: Date): Promise<void> {
    const claimId = ownerListClaimId(ownerId, itemId);
    const fresh = { _id: claimId, from: (await this.hint(ownerId)) + 1 };
    const claim = (await insertOnce(() => this.m.Claim.create(fresh)))
      ? fresh
      : await this.m.Claim.findById(claimId).lean();
    if (!claim) throw new Error(`the claim of ${claimId} is taken but cannot be read`);
    // No entry of this item can be before `from`: its claim came first.
    for (let n = claim.from; ; n++) {
      const found = await this.entry(ownerId, n);
      if (found?.itemId === itemId) return;
      if (found) continue;
      const record: EntryRecord = { _id: ownerListEntryId(ownerId, n), ownerId, n, itemId, at };
      if (await insertOnce(() => this.m.Entry.create(record))) {
        await this.advanceHead(ownerId, n);
        return;
      }
      // Another writer took this number: read its entry on the next turn.
      n--;
    }
  }

  /** The item ids of entries `newest`, `newest - 1`, … down to 1, at most `count` of them. */
  private async itemsDown(ownerId: string, newest: number, count: number): Promise<string[]> {
    const numbers: number[] = [];
    for (let n = newest; n >= 1 && numbers.length < count; n--) numbers.push(n);
    const found = await Promise.all(numbers.map((n) => this.entry(ownerId, n)));
    return found.filter((e): e is EntryRecord => e !== null).map((e) => e.itemId);
  }

  /** Item ids newest first: `limit` of them after skipping `offset`. */
  async page(ownerId: string, { offset, limit }: { offset: number; limit: number }) {
    return this.itemsDown(ownerId, (await this.length(ownerId)) - offset, limit);
  }

  /** Every item id, newest first, a batch at a time: the caller stops when it has enough. */
  async *newestFirst(ownerId: string): AsyncGenerator<string[]> {
    for (let newest = await this.length(ownerId); newest >= 1; newest -= READ_WIDTH) {
      yield await this.itemsDown(ownerId, newest, READ_WIDTH);
    }
  }

  /**
   * Adds what was stored before this list existed (a scan, once per deployment): every item of
   * `stored`, oldest first, then marks the list filled. Safe to run twice or on two replicas.
   */
  async backfill(stored: AsyncIterable<{ ownerId: string; itemId: string; at: Date }>) {
    if (await this.m.Head.exists({ _id: BACKFILLED })) return;
    for await (const item of stored) await this.add(item.ownerId, item.itemId, item.at);
    await insertOnce(() => this.m.Head.create({ _id: BACKFILLED, n: 0 }));
  }
}

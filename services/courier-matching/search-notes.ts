import { BoundedMap } from '../../libs/lookup-cache';
import {
  searchNoteId,
  type SearchNote,
  type SearchNoteRecord,
  type SearchStore,
} from './search-store';

/** What a search's notes say, read up to the `count`-th. */
export interface SearchNotesRead {
  count: number;
  /**
   * Each courier noted out of it for declining or missing an offer, and from when (ms since
   * the epoch): they are asked again MATCHING_REASK_AFTER_MS after it.
   */
  tried: ReadonlyMap<string, number>;
  /** The couriers noted out as retired: out while they stay retired (`Searches` asks). */
  retired: ReadonlySet<string>;
  /** The offers whose courier was noted out as they closed. */
  closed: ReadonlySet<string>;
  missed: ReadonlySet<string>;
}

const NONE: SearchNotesRead = {
  count: 0,
  tried: new Map(),
  retired: new Set(),
  closed: new Set(),
  missed: new Set(),
};

/** The searches whose notes one process keeps as read: a few per running search. */
const SEARCHES_KEPT = 10_000;

/** The notes as read, with the next one (the `count + 1`-th, made at `atMs`) added. */
export function withNote(read: SearchNotesRead, note: SearchNote, atMs: number): SearchNotesRead {
  const count = read.count + 1;
  if (note.kind === 'MISSED') {
    return { ...read, count, missed: new Set(read.missed).add(note.offerId) };
  }
  if (note.forGood) return { ...read, count, retired: new Set(read.retired).add(note.courierId) };
  // Out from the later of when the note was made and when its offer was (the step's clock,
  // which a test may set ahead), and from their latest such note.
  const from = Math.max(atMs, msOf(note.offeredAt), read.tried.get(note.courierId) ?? 0);
  return {
    ...read,
    count,
    tried: new Map(read.tried).set(note.courierId, from),
    closed: note.offerId ? new Set(read.closed).add(note.offerId) : read.closed,
  };
}

/**
 * Whether the notes as read hold this one already: a retirement, when one is; an offer's
 * closing, when that offer's is; any other courier's note (made before session 68), when they
 * were noted at all.
 */
export function holdsNote(read: SearchNotesRead, note: SearchNote): boolean {
  if (note.kind === 'MISSED') return read.missed.has(note.offerId);
  if (note.forGood) return read.retired.has(note.courierId);
  if (note.offerId) return read.closed.has(note.offerId);
  return read.tried.has(note.courierId);
}

/** The couriers noted out (declined, missed) at or after `sinceMs`: not asked again yet. */
export function triedSince(read: SearchNotesRead, sinceMs: number): string[] {
  return [...read.tried].filter(([, at]) => at >= sinceMs).map(([courierId]) => courierId);
}

/** A time as ms since the epoch; none (or none readable) as long ago. */
const msOf = (at: Date | string | undefined): number => new Date(at ?? 0).getTime() || 0;

/** When a note was made; one stored without its time (none should be) counts as long ago. */
const madeAt = (record: Pick<SearchNoteRecord, 'at'>) => msOf(record.at);

/**
 * The couriers and offers each search has noted out of it, numbered 1, 2, … by insert: a note
 * takes the first free number, and one that finds it taken reads on and takes the next, so
 * any number noted at once are all kept. Notes are never changed nor removed, so what this
 * process has read of a search stays true, and a read fetches only those noted since: one
 * read by `_id` when there are none.
 */
export class SearchNotes {
  private readonly read = new BoundedMap<SearchNotesRead>(SEARCHES_KEPT);

  constructor(private readonly store: Pick<SearchStore, 'searchNote' | 'claimSearchNote'>) {}

  /** Everything the search has noted so far. */
  async of(deliveryId: string): Promise<SearchNotesRead> {
    let read = this.read.get(deliveryId) ?? NONE;
    for (
      let next = await this.store.searchNote(deliveryId, read.count + 1);
      next;
      next = await this.store.searchNote(deliveryId, read.count + 1)
    ) {
      read = withNote(read, next, madeAt(next));
    }
    this.read.set(deliveryId, read);
    return read;
  }

  /** Notes a courier or an offer out of the search, once however many note it at once. */
  async note(deliveryId: string, note: SearchNote): Promise<void> {
    for (;;) {
      const read = await this.of(deliveryId);
      if (holdsNote(read, note)) return;
      const k = read.count + 1;
      const record: SearchNoteRecord = {
        ...note,
        _id: searchNoteId(deliveryId, k),
        deliveryId,
        k,
        at: new Date(),
      };
      if (await this.store.claimSearchNote(record)) {
        this.read.set(deliveryId, withNote(read, note, madeAt(record)));
        return;
      }
      // Another note took the k-th place: read it (and any after), then take the next.
    }
  }

  /** A courier retired as the search went to them: out of it for good. */
  noteRetired(deliveryId: string, courierId: string): Promise<void> {
    return this.note(deliveryId, { kind: 'TRIED', courierId, forGood: true });
  }

  /** A search that is over is read no more here. */
  forget(deliveryId: string): void {
    this.read.delete(deliveryId);
  }
}

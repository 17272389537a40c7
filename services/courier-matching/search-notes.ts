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
  /** Each courier noted out of it, and when they last were (ms since the epoch). */
  tried: ReadonlyMap<string, number>;
  missed: ReadonlySet<string>;
}

const NONE: SearchNotesRead = { count: 0, tried: new Map(), missed: new Set() };

/** The searches whose notes one process keeps as read: a few per running search. */
const SEARCHES_KEPT = 10_000;

/** The notes as read, with the next one (the `count + 1`-th, made at `atMs`) added. */
export function withNote(read: SearchNotesRead, note: SearchNote, atMs: number): SearchNotesRead {
  const count = read.count + 1;
  if (note.kind === 'TRIED') {
    const last = Math.max(atMs, read.tried.get(note.courierId) ?? atMs);
    return { ...read, count, tried: new Map(read.tried).set(note.courierId, last) };
  }
  return { ...read, count, missed: new Set(read.missed).add(note.offerId) };
}

/**
 * Whether the notes as read hold this one already; a courier, when they were noted at or after
 * `sinceMs` (any time, when not given): one noted before is asked again (`reaskAfterMs`).
 */
export function holdsNote(read: SearchNotesRead, note: SearchNote, sinceMs?: number): boolean {
  if (note.kind === 'MISSED') return read.missed.has(note.offerId);
  const at = read.tried.get(note.courierId);
  return at !== undefined && (sinceMs === undefined || at >= sinceMs);
}

/** The couriers noted out at or after `sinceMs`: those not asked again yet. */
export function triedSince(read: SearchNotesRead, sinceMs: number): string[] {
  return [...read.tried].filter(([, at]) => at >= sinceMs).map(([courierId]) => courierId);
}

/** When a note was made; one stored without its time (none should be) counts as long ago. */
const madeAt = (record: Pick<SearchNoteRecord, 'at'>) => new Date(record.at ?? 0).getTime() || 0;

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

  /**
   * Notes a courier or an offer out of the search, once however many note it at once; a courier
   * noted before `sinceMs` (asked again since) is noted anew.
   */
  async note(deliveryId: string, note: SearchNote, sinceMs?: number): Promise<void> {
    for (;;) {
      const read = await this.of(deliveryId);
      if (holdsNote(read, note, sinceMs)) return;
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

  noteTried(deliveryId: string, courierId: string, sinceMs?: number): Promise<void> {
    return this.note(deliveryId, { kind: 'TRIED', courierId }, sinceMs);
  }

  /** A search that is over is read no more here. */
  forget(deliveryId: string): void {
    this.read.delete(deliveryId);
  }
}

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
  tried: ReadonlySet<string>;
  missed: ReadonlySet<string>;
}

const NONE: SearchNotesRead = { count: 0, tried: new Set(), missed: new Set() };

/** The searches whose notes one process keeps as read: a few per running search. */
const SEARCHES_KEPT = 10_000;

/** The notes as read, with the next one (the `count + 1`-th) added. */
export function withNote(read: SearchNotesRead, note: SearchNote): SearchNotesRead {
  const count = read.count + 1;
  if (note.kind === 'TRIED')
    return { ...read, count, tried: new Set(read.tried).add(note.courierId) };
  return { ...read, count, missed: new Set(read.missed).add(note.offerId) };
}

/** Whether the notes as read hold this one already. */
export function holdsNote(read: SearchNotesRead, note: SearchNote): boolean {
  return note.kind === 'TRIED' ? read.tried.has(note.courierId) : read.missed.has(note.offerId);
}

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
      read = withNote(read, next);
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
        this.read.set(deliveryId, withNote(read, note));
        return;
      }
      // Another note took the k-th place: read it (and any after), then take the next.
    }
  }

  noteTried(deliveryId: string, courierId: string): Promise<void> {
    return this.note(deliveryId, { kind: 'TRIED', courierId });
  }

  /** A search that is over is read no more here. */
  forget(deliveryId: string): void {
    this.read.delete(deliveryId);
  }
}

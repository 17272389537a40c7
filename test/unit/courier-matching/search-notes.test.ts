import fc from 'fast-check';
import {
  holdsNote,
  SearchNotes,
  triedSince,
  withNote,
  type SearchNotesRead,
} from '../../../services/courier-matching/search-notes';
import type { SearchNote, SearchNoteRecord } from '../../../services/courier-matching/search-store';

const DELIVERY = 'd1';

/** Notes kept as the database keeps them: one insert per `_id` wins, each read by `_id`. */
function notesTable(schedule: <T>(step: () => Promise<T>) => Promise<T>) {
  const rows = new Map<string, SearchNoteRecord>();
  return {
    rows,
    searchNote: (deliveryId: string, k: number) =>
      schedule(async () => rows.get(`${deliveryId}:${k}`) ?? null),
    claimSearchNote: (note: SearchNoteRecord) =>
      schedule(async () => {
        if (rows.has(note._id)) return false;
        rows.set(note._id, note);
        return true;
      }),
  };
}

const courierNote = fc
  .constantFrom('c1', 'c2', 'c3', 'c4')
  .map((courierId): SearchNote => ({ kind: 'TRIED', courierId }));
const missedNote = fc
  .constantFrom('o1', 'o2')
  .map((offerId): SearchNote => ({ kind: 'MISSED', offerId }));

it('keeps every note made at once by any number of replicas, each once, in any interleaving', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.scheduler(),
      // Per caller, the notes it makes one after another.
      fc.array(fc.array(fc.oneof(courierNote, missedNote), { minLength: 1, maxLength: 3 }), {
        minLength: 1,
        maxLength: 4,
      }),
      async (s, byReplica) => {
        // Each read or insert runs when the scheduler picks it.
        const table = notesTable((step) => s.schedule(Promise.resolve()).then(step));
        // The first two note through one process's instance, beside each other.
        const shared = new SearchNotes(table);
        const replicas = byReplica.map((_, i) => (i < 2 ? shared : new SearchNotes(table)));
        const done = Promise.all(
          byReplica.map(async (notes, i) => {
            for (const note of notes) await replicas[i].note(DELIVERY, note);
          }),
        );
        await s.waitFor(done);
        const wanted = byReplica.flat();
        const reader = new SearchNotes(table);
        const read = s.waitFor(reader.of(DELIVERY));
        await s.waitAll();
        const all = await read;
        for (const note of wanted) expect(holdsNote(all, note)).toBe(true);
        const distinct = new Set(wanted.map((n) => (n.kind === 'TRIED' ? n.courierId : n.offerId)));
        expect(all.count).toBe(distinct.size);
        expect(table.rows.size).toBe(distinct.size);
        // Numbered from one without gaps.
        expect([...table.rows.values()].map((r) => r.k).sort()).toEqual(
          Array.from({ length: distinct.size }, (_, i) => i + 1),
        );
      },
    ),
    { numRuns: 200 },
  );
});

it('reads on from what it has read, and a search forgotten is read from its first note again', async () => {
  const reads: number[] = [];
  const table = notesTable(async (step) => step());
  const counted = {
    ...table,
    searchNote: (deliveryId: string, k: number) => {
      reads.push(k);
      return table.searchNote(deliveryId, k);
    },
  };
  const notes = new SearchNotes(counted);
  await new SearchNotes(table).note(DELIVERY, { kind: 'TRIED', courierId: 'c1' });
  await new SearchNotes(table).note(DELIVERY, { kind: 'TRIED', courierId: 'c2' });
  expect((await notes.of(DELIVERY)).count).toBe(2);
  expect(reads).toEqual([1, 2, 3]);
  reads.length = 0;
  expect((await notes.of(DELIVERY)).count).toBe(2);
  expect(reads).toEqual([3]);
  notes.forget(DELIVERY);
  reads.length = 0;
  await notes.of(DELIVERY);
  expect(reads).toEqual([1, 2, 3]);
});

/** A search's notes before any was read. */
const none: SearchNotesRead = {
  count: 0,
  tried: new Map(),
  retired: new Set(),
  closed: new Set(),
  missed: new Set(),
};

it('folds a note into what was read', () => {
  const one = withNote(none, { kind: 'TRIED', courierId: 'c1' }, 1_000);
  const two = withNote(one, { kind: 'MISSED', offerId: 'o1' }, 2_000);
  expect(two).toEqual({
    count: 2,
    tried: new Map([['c1', 1_000]]),
    retired: new Set(),
    closed: new Set(),
    missed: new Set(['o1']),
  });
  expect(holdsNote(two, { kind: 'TRIED', courierId: 'c1' })).toBe(true);
  expect(holdsNote(two, { kind: 'TRIED', courierId: 'o1' })).toBe(false);
  expect(holdsNote(two, { kind: 'MISSED', offerId: 'c1' })).toBe(false);
  // What was read before stays as it was.
  expect(one.missed.size).toBe(0);
});

it('holds a courier out from their latest note, asked again once it is older than asked', () => {
  const c1 = { kind: 'TRIED', courierId: 'c1' } as const;
  const once = withNote(none, c1, 1_000);
  expect(triedSince(once, 1_000)).toEqual(['c1']);
  expect(triedSince(once, 1_001)).toEqual([]);
  // Noted again later (asked again, declined again): out from then; an older note read after a
  // newer one does not bring it back.
  const again = withNote(withNote(once, c1, 5_000), c1, 3_000);
  expect(again.tried).toEqual(new Map([['c1', 5_000]]));
  expect(triedSince(again, 4_000)).toEqual(['c1']);
});

it('holds an offer’s closing by the offer, from the later of its note and its offer, and a retirement for good', () => {
  const declined = {
    kind: 'TRIED',
    courierId: 'c1',
    offerId: 'd:1',
    offeredAt: new Date(9_000),
  } as const;
  // Made at 5 000 by a clock behind the step's that made the offer at 9 000: out from 9 000.
  const read = withNote(none, declined, 5_000);
  expect(read.tried.get('c1')).toBe(9_000);
  expect(holdsNote(read, declined)).toBe(true);
  // Another offer to them is another closing, whatever the times.
  expect(holdsNote(read, { ...declined, offerId: 'd:2' })).toBe(false);
  expect(triedSince(read, 9_000)).toEqual(['c1']);
  expect(triedSince(read, 9_001)).toEqual([]);
  // Retired: noted apart, however long ago; their declines go on being noted and timed, for
  // when they are back at work.
  const retired = withNote(read, { kind: 'TRIED', courierId: 'c1', forGood: true }, 1_000);
  expect(retired.retired).toEqual(new Set(['c1']));
  expect(read.retired).toEqual(new Set());
  expect(holdsNote(retired, { kind: 'TRIED', courierId: 'c1', forGood: true })).toBe(true);
  expect(holdsNote(read, { kind: 'TRIED', courierId: 'c1', forGood: true })).toBe(false);
  const later = { ...declined, offerId: 'd:3', offeredAt: new Date(50_000) };
  expect(holdsNote(retired, later)).toBe(false);
  const declinedAgain = withNote(retired, later, 50_500);
  expect(triedSince(declinedAgain, 50_500)).toEqual(['c1']);
  expect(holdsNote(declinedAgain, later)).toBe(true);
});

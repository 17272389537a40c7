import fc from 'fast-check';
import { LIFT_AFTER_CLOSED, PENDING_ITEM_MS, afterRead, judgeItem } from '../../../libs/owner-list';
import { isOpen, type PackageRecord } from '../../../services/package/store';

describe('afterRead', () => {
  const entries = (spec: string) =>
    // Newest first, as a read goes: 'c' closed, 'L' live; numbered from the bottom up.
    [...spec].map((c, i) => ({ n: spec.length - i, live: c === 'L' }));

  it('raises the floor to the lowest live entry, or past the newest when none is live', () => {
    expect(afterRead([])).toEqual({ floor: undefined, lift: false, unlifted: undefined });
    expect(afterRead(entries('cLcLc'))).toEqual({ floor: 2, lift: false, unlifted: 2 });
    expect(afterRead(entries('cc'))).toEqual({ floor: 3, lift: false, unlifted: 3 });
  });

  it('lifts the live items once the closed ones above them outnumber the bound and them', () => {
    const piled = 'c'.repeat(LIFT_AFTER_CLOSED);
    expect(afterRead(entries(`${piled.slice(1)}Lc`))).toMatchObject({ floor: 2, lift: false });
    expect(afterRead(entries(`${piled}Lc`))).toEqual({
      floor: LIFT_AFTER_CLOSED + 3,
      lift: true,
      // Left for a later read, the floor stops at the live one.
      unlifted: 2,
    });
    const manyLive = 'L'.repeat(LIFT_AFTER_CLOSED + 1);
    expect(afterRead(entries(`${piled}${manyLive}`)).lift).toBe(false);
  });

  it('never passes a live entry it does not lift, nor leaves many closed entries above the floor', () => {
    const reads = fc
      .uniqueArray(fc.integer({ min: 1, max: 10_000 }), { minLength: 1, maxLength: 300 })
      .chain((ns) =>
        fc.tuple(
          fc.constant(ns),
          fc.array(fc.boolean(), { minLength: ns.length, maxLength: ns.length }),
        ),
      )
      .map(([ns, lives]) => ns.map((n, i) => ({ n, live: lives[i] })));
    fc.assert(
      fc.property(reads, (read) => {
        const { floor, lift, unlifted } = afterRead(read) as {
          floor: number;
          lift: boolean;
          unlifted: number;
        };
        const newest = Math.max(...read.map((r) => r.n));
        const live = read.filter((r) => r.live);
        // Unlifted, the floor never passes a live entry.
        for (const r of live) expect(r.n).toBeGreaterThanOrEqual(unlifted);
        if (lift) {
          expect(floor).toBe(newest + 1);
          return;
        }
        expect(unlifted).toBe(floor);
        for (const r of live) expect(r.n).toBeGreaterThanOrEqual(floor);
        const closedAbove = read.filter((r) => !r.live && r.n >= floor).length;
        expect(closedAbove).toBeLessThan(Math.max(LIFT_AFTER_CLOSED, live.length));
      }),
    );
  });
});

describe("what a read of the user's list makes of an entry (judgeItem, isOpen)", () => {
  const userId = 'd2b0c7a4-1e3f-4a5b-8c6d-7e8f9a0b1c2d';
  const now = Date.parse('2026-11-24T12:00:00Z');
  const entry = (ageMs: number) => ({ n: 1, itemId: 'p', at: new Date(now - ageMs) });
  const mayBeListed = (
    _: string,
    found: PackageRecord | null,
    e: ReturnType<typeof entry>,
    at: number,
  ) => judgeItem(found, e, at, (p) => isOpen(userId, p)).live;
  const stored = (changes: Partial<PackageRecord>) =>
    ({ _id: 'p', userId, deletedAt: null, p2pDeliveryId: null, ...changes }) as PackageRecord;

  it('keeps an open package and one whose insert may still be running', () => {
    expect(mayBeListed(userId, stored({}), entry(PENDING_ITEM_MS * 10), now)).toBe(true);
    expect(mayBeListed(userId, null, entry(0), now)).toBe(true);
    expect(mayBeListed(userId, null, entry(PENDING_ITEM_MS - 1), now)).toBe(true);
  });

  it('lets go of deleted, taken and foreign packages and of inserts that died', () => {
    expect(mayBeListed(userId, stored({ deletedAt: new Date(now) }), entry(0), now)).toBe(false);
    expect(mayBeListed(userId, stored({ p2pDeliveryId: 'd' }), entry(0), now)).toBe(false);
    expect(mayBeListed(userId, stored({ userId: 'someone else' }), entry(0), now)).toBe(false);
    expect(mayBeListed(userId, null, entry(PENDING_ITEM_MS), now)).toBe(false);
  });
});

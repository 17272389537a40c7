import fc from 'fast-check';
import { Slots, type Slot } from '../../../services/file/slots';

const isSlot = (taken: ReturnType<Slots['take']>): taken is Slot => typeof taken === 'object';
const server = (userId: string) => ({ userId, publishable: false });
const publishable = (userId: string) => ({ userId, publishable: true });

describe('Slots', () => {
  it('gives out at most max slots, and one more once one is given back', () => {
    const events: { active: number; refused: boolean }[] = [];
    const slots = new Slots(2, (e) => events.push(e));
    const first = slots.take(server('a'));
    const second = slots.take(server('b'));
    expect(isSlot(first) && isSlot(second)).toBe(true);
    expect(slots.take(server('c'))).toBe('full');
    expect(slots.size).toBe(2);
    if (isSlot(first)) first.release();
    expect(slots.size).toBe(1);
    expect(isSlot(slots.take(server('c')))).toBe(true);
    expect(events).toEqual([
      { active: 1, refused: false },
      { active: 2, refused: false },
      { active: 2, refused: true },
      { active: 1, refused: false },
      { active: 2, refused: false },
    ]);
  });

  it('counts a slot given back twice only once', () => {
    const slots = new Slots(1);
    const slot = slots.take(server('a'));
    if (!isSlot(slot)) throw new Error('no slot');
    slot.release();
    slot.release();
    expect(slots.size).toBe(0);
    expect(isSlot(slots.take(server('a')))).toBe(true);
    expect(slots.take(server('b'))).toBe('full');
  });

  it('gives one owner half the slots at most, so that another always finds one', () => {
    const slots = new Slots(8);
    const mine = Array.from({ length: 4 }, () => slots.take(server('greedy')));
    expect(mine.every(isSlot)).toBe(true);
    expect(slots.take(server('greedy'))).toBe('owner-full');
    expect(isSlot(slots.take(server('other')))).toBe(true);
    const [first] = mine;
    if (isSlot(first)) first.release();
    expect(isSlot(slots.take(server('greedy')))).toBe(true);
  });

  it('never passes max in all, nor half of it for one owner, however slots are taken and given back', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.boolean()), { maxLength: 60 }),
        (max, steps) => {
          const slots = new Slots(max);
          const held: { owner: string; slot: Slot }[] = [];
          for (const [owner, give] of steps) {
            const mine = held.findIndex((h) => h.owner === owner);
            if (give && mine >= 0) {
              held.splice(mine, 1)[0].slot.release();
              continue;
            }
            const taken = slots.take(server(owner));
            const count = held.filter((h) => h.owner === owner).length;
            if (isSlot(taken)) held.push({ owner, slot: taken });
            // Refused only when the process is full or the owner holds its half.
            else expect(held.length >= max || count >= Math.ceil(max / 2)).toBe(true);
            expect(slots.size).toBe(held.length);
            expect(held.length).toBeLessThanOrEqual(max);
            expect(held.filter((h) => h.owner === owner).length).toBeLessThanOrEqual(
              Math.max(1, Math.ceil(max / 2)),
            );
          }
        },
      ),
    );
  });

  it('leaves an account’s servers half of its part whatever its publishable keys take', () => {
    const slots = new Slots(8);
    expect([slots.ownerMax, slots.publishableMax]).toEqual([4, 2]);
    const leaked = Array.from({ length: 2 }, () => slots.take(publishable('shop')));
    expect(leaked.every(isSlot)).toBe(true);
    expect(slots.take(publishable('shop'))).toBe('publishable-full');
    // Another account's publishable keys count apart.
    expect(isSlot(slots.take(publishable('other')))).toBe(true);
    expect(isSlot(slots.take(server('shop')))).toBe(true);
    expect(isSlot(slots.take(server('shop')))).toBe(true);
    // The account's part is full: its publishable keys are told so, not of their own part.
    expect(slots.take(server('shop'))).toBe('owner-full');
    expect(slots.take(publishable('shop'))).toBe('owner-full');
    const [first] = leaked;
    if (isSlot(first)) first.release();
    expect(isSlot(slots.take(publishable('shop')))).toBe(true);
  });

  it('never lets publishable keys take more than their part, nor keep the servers out', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.tuple(fc.boolean(), fc.boolean()), { maxLength: 60 }),
        (max, steps) => {
          const slots = new Slots(max);
          const held: { publishable: boolean; slot: Slot }[] = [];
          for (const [isPublishable, give] of steps) {
            const mine = held.findIndex((h) => h.publishable === isPublishable);
            if (give && mine >= 0) {
              held.splice(mine, 1)[0].slot.release();
              continue;
            }
            const taken = slots.take({ userId: 'shop', publishable: isPublishable });
            if (isSlot(taken)) held.push({ publishable: isPublishable, slot: taken });
            const ofPublishable = held.filter((h) => h.publishable).length;
            expect(ofPublishable).toBeLessThanOrEqual(Math.max(1, Math.floor(slots.ownerMax / 2)));
            expect(held.length).toBeLessThanOrEqual(slots.ownerMax);
            // A server key is refused only when the account's part is full.
            if (!isPublishable && !isSlot(taken)) expect(held.length).toBe(slots.ownerMax);
          }
        },
      ),
    );
  });
});

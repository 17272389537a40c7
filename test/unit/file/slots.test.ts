import fc from 'fast-check';
import { Slots, type Slot } from '../../../services/file/slots';

const isSlot = (taken: ReturnType<Slots['take']>): taken is Slot => typeof taken === 'object';

describe('Slots', () => {
  it('gives out at most max slots, and one more once one is given back', () => {
    const events: { active: number; refused: boolean }[] = [];
    const slots = new Slots(2, (e) => events.push(e));
    const first = slots.take('a');
    const second = slots.take('b');
    expect(isSlot(first) && isSlot(second)).toBe(true);
    expect(slots.take('c')).toBe('full');
    expect(slots.size).toBe(2);
    if (isSlot(first)) first.release();
    expect(slots.size).toBe(1);
    expect(isSlot(slots.take('c'))).toBe(true);
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
    const slot = slots.take('a');
    if (!isSlot(slot)) throw new Error('no slot');
    slot.release();
    slot.release();
    expect(slots.size).toBe(0);
    expect(isSlot(slots.take('a'))).toBe(true);
    expect(slots.take('b')).toBe('full');
  });

  it('gives one owner half the slots at most, so that another always finds one', () => {
    const slots = new Slots(8);
    const mine = Array.from({ length: 4 }, () => slots.take('greedy'));
    expect(mine.every(isSlot)).toBe(true);
    expect(slots.take('greedy')).toBe('owner-full');
    expect(isSlot(slots.take('other'))).toBe(true);
    const [first] = mine;
    if (isSlot(first)) first.release();
    expect(isSlot(slots.take('greedy'))).toBe(true);
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
            const taken = slots.take(owner);
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
});

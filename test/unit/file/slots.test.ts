import { Slots } from '../../../services/file/slots';

describe('Slots', () => {
  it('gives out at most max slots, and one more once one is given back', () => {
    const events: { active: number; refused: boolean }[] = [];
    const slots = new Slots(2, (e) => events.push(e));
    const first = slots.take();
    const second = slots.take();
    expect(first && second).toBeDefined();
    expect(slots.take()).toBeUndefined();
    expect(slots.size).toBe(2);
    first?.release();
    expect(slots.size).toBe(1);
    expect(slots.take()).toBeDefined();
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
    const slot = slots.take();
    slot?.release();
    slot?.release();
    expect(slots.size).toBe(0);
    expect(slots.take()).toBeDefined();
    expect(slots.take()).toBeUndefined();
  });
});

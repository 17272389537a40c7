import {
  recordIds,
  shownSteps,
  type DeliveryRecord,
  type StepRecord,
} from '../../../services/order/delivery-record';
import type { OrderStore } from '../../../services/order/store';
import {
  DeliveryTransitions,
  fold,
  nextTransition,
  withStep,
} from '../../../services/order/transitions';

const step = (name: string, hidden = false): StepRecord => ({
  id: name,
  step: name,
  active: true,
  hidden,
  updatedAt: new Date(0),
});
const activeOnes = (steps: StepRecord[]) => steps.filter((s) => s.active).map((s) => s.step);

describe('withStep', () => {
  it('makes a new visible step the active one', () => {
    const steps = withStep([step('REQUEST_CREATED')], step('COURIER_ASSIGNED'));
    expect(activeOnes(steps)).toEqual(['COURIER_ASSIGNED']);
    expect(steps.map((s) => s.step)).toEqual(['REQUEST_CREATED', 'COURIER_ASSIGNED']);
  });

  it('leaves the active step shown when the new one is hidden (a checkout paid)', () => {
    const paid = withStep([step('REQUEST_CREATED')], step('PAYMENT_CONFIRMED', true));
    expect(activeOnes(paid)).toEqual(['REQUEST_CREATED']);
    expect(paid.map((s) => s.step)).toEqual(['REQUEST_CREATED', 'PAYMENT_CONFIRMED']);
    // The next visible step takes over as before.
    expect(activeOnes(withStep(paid, step('COURIER_ASSIGNED')))).toEqual(['COURIER_ASSIGNED']);
  });

  it('changes nothing without a step', () => {
    const steps = [step('REQUEST_CREATED')];
    expect(withStep(steps, null)).toBe(steps);
  });
});

describe('shownSteps', () => {
  it('shows the visible steps, the latest active, whatever the stored flags say', () => {
    // As a checkout's payment left a delivery stored before withStep kept the shown step.
    const stored = [{ ...step('REQUEST_CREATED'), active: false }, step('PAYMENT_CONFIRMED', true)];
    expect(shownSteps(stored).map((s) => [s.step, s.active])).toEqual([['REQUEST_CREATED', true]]);
    const assigned = withStep(stored, step('COURIER_ASSIGNED'));
    expect(shownSteps(assigned).map((s) => [s.step, s.active])).toEqual([
      ['REQUEST_CREATED', false],
      ['COURIER_ASSIGNED', true],
    ]);
    expect(shownSteps([])).toEqual([]);
  });
});

/** A delivery on its way to the door, its creator's share paid. */
const carrying = (requireCollectionProofCode: boolean) =>
  ({
    _id: '5d0c1b2a-3e4f-4a5b-8c6d-7e8f9a0b1c2d',
    version: 4,
    lifecycle: {
      status: 'IN_TRANSIT',
      p2pStatus: 'PENDING',
      owes: { creator: true, recipient: false },
      paid: { creator: true, recipient: false },
    },
    requireCollectionProofCode,
    proofs: [],
    steps: [],
  }) as unknown as DeliveryRecord;

describe('a return proof', () => {
  const at = new Date('2030-01-01T10:00:00Z');
  const failed = (delivery: DeliveryRecord) => {
    const t = nextTransition(delivery, { kind: 'FAILED', reason: 'Nobody at the door' }, at);
    if (typeof t === 'string') throw new Error(t);
    return t;
  };
  const returnProofs = (d: DeliveryRecord) => d.proofs.filter((p) => p.type === 'RETURN');

  it('is added by the failure that sends the packages back, when the sender gives codes', () => {
    const back = fold(carrying(true), [failed(carrying(true))]);
    expect(returnProofs(back)).toEqual([
      {
        id: recordIds(back._id).proof('RETURN'),
        type: 'RETURN',
        codeHash: '',
        code: null,
        isActive: true,
        scannedAt: null,
        createdAt: at,
      },
    ]);
    // Read again with the same transition folded in (a repair): still one.
    expect(returnProofs(fold(back, [failed(carrying(true))]))).toHaveLength(1);
    // Given back with its code: scanned.
    const proof = { id: returnProofs(back)[0].id, code: '246810' };
    const returned = nextTransition(back, { kind: 'RETURNED', proof }, at);
    if (typeof returned === 'string') throw new Error(returned);
    expect(returnProofs(fold(back, [returned]))[0]).toMatchObject({
      code: '246810',
      scannedAt: at,
    });
  });

  it('is not added when the delivery takes no code from the sender, nor by a failure stored before return codes', () => {
    expect(returnProofs(fold(carrying(false), [failed(carrying(false))]))).toEqual([]);
    const older = { ...failed(carrying(true)), effects: [] };
    expect(returnProofs(fold(carrying(true), [older]))).toEqual([]);
  });
});

describe('a change whose delivery document cannot be written after its claim', () => {
  it('is answered as applied: the chain holds it, and the next read repairs the document', async () => {
    const claimed: unknown[] = [];
    const store = {
      enteringStatus: async () => undefined,
      claimTransition: async (record: unknown) => claimed.push(record) > 0,
      project: async () => {
        throw new Error('database busy');
      },
    } as unknown as OrderStore;
    const delivery = carrying(false);
    const left: unknown[] = [];
    const transitions = new DeliveryTransitions(store, (id, err) => left.push([id, err]));
    const applied = await transitions.apply(
      delivery._id,
      { kind: 'FAILED', reason: 'Nobody at the door' },
      { known: delivery },
    );
    expect(applied).toMatchObject({ applied: true, delivery: { version: 5 } });
    expect(claimed).toHaveLength(1);
    // Told, so that a write failing at every read is seen.
    expect(left).toEqual([[delivery._id, new Error('database busy')]]);
  });
});

describe('a change’s moment', () => {
  it('is never before the change it follows, though the writer took its moment before that one', () => {
    const followed = new Date('2030-01-01T10:00:05Z');
    const delivery = { ...carrying(false), updatedAt: followed } as DeliveryRecord;
    const taken = new Date('2030-01-01T10:00:00Z');
    const t = nextTransition(delivery, { kind: 'FAILED', reason: 'Nobody at the door' }, taken);
    if (typeof t === 'string') throw new Error(t);
    expect(t.at).toEqual(followed);
    expect(t.step?.updatedAt).toEqual(followed);
    expect(fold(delivery, [t]).updatedAt).toEqual(followed);
    // Taken after it: its own.
    const later = new Date('2030-01-01T10:00:09Z');
    const next = nextTransition(delivery, { kind: 'FAILED', reason: 'Nobody at the door' }, later);
    if (typeof next === 'string') throw new Error(next);
    expect(next.at).toEqual(later);
  });
});

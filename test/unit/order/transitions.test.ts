import { shownSteps, type StepRecord } from '../../../services/order/delivery-record';
import { withStep } from '../../../services/order/transitions';

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

import { createFleetTypeParams, updateFleetTypeParams } from '../../../services/geo/schemas';

const valid = { code: 'keke', name: 'Tricycle', maxWeightKg: 150, averageSpeedKmh: 25 };

describe('fleet type values', () => {
  it.each([
    ['a speed below walking pace', { averageSpeedKmh: 2.2250738585072014e-308 }, 'averageSpeedKmh'],
    ['a capacity below a gram', { maxWeightKg: 5e-324 }, 'maxWeightKg'],
  ])('refuse %s (it made ETAs infinite, answered as null)', (_name, change, field) => {
    const { error } = createFleetTypeParams.validate({ ...valid, ...change });
    expect(error?.details.map((d) => d.path.join('.'))).toEqual([field]);
    const edit = updateFleetTypeParams.validate({
      fleetTypeId: '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60',
      ...change,
    });
    expect(edit.error).toBeDefined();
  });

  it('take a walking pace and a gram', () => {
    const { error } = createFleetTypeParams.validate({
      ...valid,
      averageSpeedKmh: 1,
      maxWeightKg: 0.001,
    });
    expect(error).toBeUndefined();
  });
});

describe('a fleet type code', () => {
  it('is stored trimmed and lower-case, as its documented pattern allows it sent', () => {
    const { value, error } = createFleetTypeParams.validate({ ...valid, code: ' Cargo-Bike\t' });
    expect(error).toBeUndefined();
    expect(value.code).toBe('cargo-bike');
  });

  it.each([['k'], ['7up'], ['cargo bike'], ['keke!']])(
    'refuses %j, saying what a code is',
    (code) => {
      const { error } = createFleetTypeParams.validate({ ...valid, code });
      expect(error?.message).toBe(
        '"code" must be a letter, then 1 to 31 letters, digits or hyphens, like cargo-bike',
      );
    },
  );
});

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

import fc from 'fast-check';
import { ComponentSchemas, type JsonSchema } from '../../../services/gateway/json-schema';
import {
  createCourierParams,
  updateCourierParams,
} from '../../../services/courier-matching/schemas';

/** The patterns the document gives a string, all of which must match. */
function patterns(schema: JsonSchema): RegExp[] {
  const own = typeof schema.pattern === 'string' ? [new RegExp(schema.pattern)] : [];
  return [...own, ...((schema.allOf ?? []) as JsonSchema[]).flatMap(patterns)];
}
const matches = (schema: JsonSchema, text: string) =>
  [...text].length <= (schema.maxLength as number) &&
  [...text].length >= (schema.minLength as number) &&
  patterns(schema).every((p) => p.test(text));

const properties = (schema: JsonSchema) => schema.properties as Record<string, JsonSchema>;

describe('the courier document states what the validators accept', () => {
  const create = createCourierParams('https://cdn.test');
  const fleet = properties(properties(new ComponentSchemas().convert(create)).fleet);
  const accepted = (regNo: string) =>
    create.validate({
      name: 'A',
      phone: '+2348031234567',
      fleet: {
        typeId: '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60',
        regNo,
        make: 'a',
        model: 'b',
        colour: 'c',
      },
    }).error === undefined;

  it('registration numbers: the pattern and lengths are the rule (property)', () => {
    const text = fc.string({
      unit: fc.constantFrom('A', 'z', '7', ' ', '-', '\t', '\u00a0', '/', 'é'),
      maxLength: 24,
    });
    fc.assert(
      fc.property(text, (regNo) => {
        expect(matches(fleet.regNo, regNo)).toBe(accepted(regNo));
      }),
      { numRuns: 3000 },
    );
  });

  it('a change of fleet names at least one field', () => {
    const update = updateCourierParams('https://cdn.test');
    const documented = properties(new ComponentSchemas().convert(update)).fleet;
    expect(documented.minProperties).toBe(1);
    const refused = update.validate({
      courierId: '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60',
      name: 'A',
      fleet: {},
    });
    expect(refused.error?.message).toMatch(/fleet" must have at least 1 key/);
  });
});

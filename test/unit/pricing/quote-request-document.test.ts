import fc from 'fast-check';
import { validate } from '../../../libs/validation';
import { meetsRules } from '../helpers';
import { ComponentSchemas, type JsonSchema } from '../../../services/gateway/json-schema';
import {
  quoteRequestSchema,
  readQuoteRequest,
  type QuoteRequestParams,
} from '../../../services/pricing/quote-request';

/** The document's rules of a pricing body against what the service accepts: joi, then `readQuoteRequest`. */
const holds = (schema: JsonSchema, body: Record<string, unknown>) => meetsRules(schema, body);

function serviceAccepts(body: Record<string, unknown>): boolean {
  try {
    readQuoteRequest(validate(quoteRequestSchema, body) as QuoteRequestParams, true);
    return true;
  } catch {
    return false;
  }
}

const document = new ComponentSchemas().convert(quoteRequestSchema);

/** Bodies of valid values in every combination of fields (an alias in either spelling, or both). */
const bodies = fc
  .record(
    {
      packagesId: fc.constant(['0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21']),
      totalWeight: fc.constant(2),
      totalValue: fc.constant(1000),
      urgencyType: fc.constantFrom('STANDARD', 'PRIORITY', 'SCHEDULED'),
      deliveryDate: fc.constant('2030-01-15'),
      slotFields: fc.subarray(['deliverySlot', 'slot']),
      courierSelection: fc.constantFrom('ANYONE', 'SPECIFIC'),
      courierFields: fc.subarray(['courierId', 'courierProfileId']),
    },
    { requiredKeys: ['slotFields', 'courierFields'] },
  )
  .map(({ slotFields, courierFields, ...fields }) => ({
    origin: 'Ikeja, Lagos',
    destination: 'Wuse 2, Abuja',
    ...fields,
    ...Object.fromEntries(slotFields.map((f) => [f, '09:00 - 12:00'])),
    ...Object.fromEntries(courierFields.map((f) => [f, '7a0d5d44-2f7c-4b7e-8d4e-1c2b3a4d5e6f'])),
  }));

describe('the documented rules of POST /api/pricing', () => {
  it('accept exactly the bodies the service accepts (property)', () => {
    fc.assert(
      fc.property(bodies, (body) => {
        expect(holds(document, body)).toBe(serviceAccepts(body));
      }),
      { numRuns: 2000 },
    );
  });

  it('name one mode, not both, not neither', () => {
    const base = { origin: 'a', destination: 'b' };
    expect(holds(document, { ...base, packagesId: [] })).toBe(true);
    expect(holds(document, { ...base, totalWeight: 1, totalValue: 1 })).toBe(true);
    expect(holds(document, base)).toBe(false);
    expect(holds(document, { ...base, totalWeight: 1 })).toBe(false);
    expect(holds(document, { ...base, packagesId: [], totalValue: 1 })).toBe(false);
  });

  it('ask for one spelling of an alias, as the service does', () => {
    const base = { origin: 'a', destination: 'b', totalWeight: 1, totalValue: 1 };
    const slots = { urgencyType: 'SCHEDULED', deliveryDate: '2030-01-15' };
    const both = { ...base, ...slots, deliverySlot: '09:00 - 12:00', slot: '09:00 - 12:00' };
    expect(holds(document, both)).toBe(false);
    expect(serviceAccepts(both)).toBe(false);
  });
});

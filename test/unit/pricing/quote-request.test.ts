import type { QuoteLoadParams } from '../../../libs/contracts/pricing';
import type { WaybillError } from '../../../libs/errors';
import { validate } from '../../../libs/validation';
import { thrownBy } from '../helpers';
import {
  MODE_MISSING,
  MODE_NEEDS_USER,
  quoteLoadSchema,
  quoteRequestSchema,
  readLoadSchedule,
  readQuoteRequest,
  type QuoteRequestParams,
} from '../../../services/pricing/quote-request';

const base = { origin: 'Ikeja, Lagos', destination: 'Lekki, Lagos' };
const pkg = '0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21';
const courier = '7a0d5d44-2f7c-4b7e-8d4e-1c2b3a4d5e6f';

function parse(body: object): QuoteRequestParams {
  const { value, error } = quoteRequestSchema.validate({ ...base, ...body });
  if (error) throw error;
  return value as QuoteRequestParams;
}

const errorOf = (body: object, hasUser = true) =>
  thrownBy(() => readQuoteRequest(parse(body), hasUser)) as WaybillError & {
    data: { errors: { field: string; message: string }[] };
  };

describe('reading a pricing request', () => {
  it('Mode B needs both totals; Mode A the package ids', () => {
    expect(readQuoteRequest(parse({ totalWeight: 2, totalValue: 0 }), false).pricing).toEqual({
      mode: 'totals',
      totalWeight: 2,
      totalValue: 0,
    });
    expect(readQuoteRequest(parse({ packagesId: [pkg] }), true).pricing).toEqual({
      mode: 'packages',
      packageIds: [pkg],
    });
    expect(errorOf({}).message).toBe(MODE_MISSING);
    expect(errorOf({ totalWeight: 2 }).data.errors[0].field).toBe('totalValue');
    expect(errorOf({ packagesId: [pkg], totalWeight: 2, totalValue: 1 }).message).toMatch(
      /not both/,
    );
  });

  it('Mode A without a user is a 400 of its own', () => {
    const err = errorOf({ packagesId: [pkg] }, false);
    expect(err.code).toBe(400);
    expect(err.message).toBe(MODE_NEEDS_USER);
  });

  it('SCHEDULED needs a date and a slot; slot is an alias', () => {
    const ok = readQuoteRequest(
      parse({
        totalWeight: 1,
        totalValue: 1,
        urgencyType: 'SCHEDULED',
        deliveryDate: '2026-12-01',
        slot: '09:00-12:00',
      }),
      true,
    );
    expect(ok.schedule).toEqual({ date: '2026-12-01', slot: { start: 540, end: 720 } });
    const missing = errorOf({ totalWeight: 1, totalValue: 1, urgencyType: 'SCHEDULED' });
    expect(missing.data.errors.map((e: { field: string }) => e.field)).toEqual([
      'deliveryDate',
      'deliverySlot',
    ]);
    const clash = errorOf({
      totalWeight: 1,
      totalValue: 1,
      urgencyType: 'SCHEDULED',
      deliveryDate: '2026-12-01',
      slot: '09:00 - 12:00',
      deliverySlot: '10:00 - 12:00',
    });
    expect(clash.message).toBe(
      'deliverySlot and slot are two spellings of one field; send only one',
    );
  });

  it('refuses a date or slot without SCHEDULED, and malformed ones', () => {
    const check = (body: object) =>
      quoteRequestSchema.validate({ ...base, totalWeight: 1, totalValue: 1, ...body }).error
        ?.message;
    expect(check({ deliveryDate: '2026-12-01' })).toBe(
      '"deliveryDate" applies only when urgencyType is SCHEDULED',
    );
    expect(check({ urgencyType: 'SCHEDULED', deliveryDate: '2026-02-30' })).toMatch(
      /calendar date/,
    );
    expect(check({ urgencyType: 'SCHEDULED', deliverySlot: '12:00 - 09:00' })).toMatch(
      /start before its end/,
    );
  });

  it('SPECIFIC needs a courier, ANYONE refuses one', () => {
    expect(
      readQuoteRequest(
        parse({
          totalWeight: 1,
          totalValue: 1,
          courierSelection: 'SPECIFIC',
          courierProfileId: courier,
        }),
        true,
      ).courierId,
    ).toBe(courier);
    expect(errorOf({ totalWeight: 1, totalValue: 1, courierSelection: 'SPECIFIC' }).message).toBe(
      'courierId is required when courierSelection is SPECIFIC',
    );
    expect(errorOf({ totalWeight: 1, totalValue: 1, courierId: courier }).message).toBe(
      'courierId applies only when courierSelection is SPECIFIC',
    );
    // Named as the client spelled it.
    expect(
      errorOf({ totalWeight: 1, totalValue: 1, courierProfileId: courier }).data.errors,
    ).toEqual([
      {
        field: 'courierProfileId',
        message: 'courierProfileId applies only when courierSelection is SPECIFIC',
      },
    ]);
  });

  it('fills the defaults', () => {
    expect(parse({ totalWeight: 1, totalValue: 1 })).toMatchObject({
      urgencyType: 'STANDARD',
      courierSelection: 'ANYONE',
      deliveryFeePayer: 'CREATOR',
      payOnDelivery: false,
    });
  });
});

describe("reading pricing.quote's schedule", () => {
  const load = {
    ...base,
    load: { weightGrams: 1000, valueKobo: 0 },
    urgencyType: 'STANDARD',
    deliveryFeePayer: 'CREATOR',
    payOnDelivery: false,
  };
  const mode = { totalWeight: 1, totalValue: 0 };
  /** What the platform's validator throws for a body, as a caller sees it. */
  const refusal = (schema: typeof quoteLoadSchema, body: object) => {
    const err = thrownBy(() => validate(schema, body)) as WaybillError;
    return { type: err.type, message: err.message, data: err.data };
  };

  it.each([
    { urgencyType: 'SCHEDULED', deliveryDate: '2026-02-30', deliverySlot: '09:00 - 12:00' },
    { urgencyType: 'SCHEDULED', deliveryDate: '2026-12-01', deliverySlot: '12:00 - 09:00' },
    { urgencyType: 'SCHEDULED', deliveryDate: '01/12/2026', deliverySlot: 'morning' },
    { urgencyType: 'PRIORITY', deliveryDate: '2026-12-01' },
    { urgencyType: 'STANDARD', deliverySlot: '09:00 - 12:00' },
  ])('refuses %j with the messages of POST /api/pricing', (schedule) => {
    expect(refusal(quoteLoadSchema, { ...load, ...schedule })).toEqual(
      refusal(quoteRequestSchema, { ...base, ...mode, ...schedule }),
    );
  });

  it('reads the date and slot as POST /api/pricing reads them', () => {
    const params = validate(quoteLoadSchema, {
      ...load,
      urgencyType: 'SCHEDULED',
      deliveryDate: '2026-12-01',
      deliverySlot: '09:00-12:00',
    }) as QuoteLoadParams;
    expect(params.deliverySlot).toBe('09:00 - 12:00');
    expect(readLoadSchedule(params)).toEqual({
      date: '2026-12-01',
      slot: { start: 540, end: 720 },
    });
    expect(readLoadSchedule(validate(quoteLoadSchema, load) as QuoteLoadParams)).toBeUndefined();
  });

  it.each([{}, { deliveryDate: '2026-12-01' }, { deliverySlot: '09:00 - 12:00' }])(
    'SCHEDULED without both of %j is the 400 of POST /api/pricing',
    (schedule) => {
      const params = validate(quoteLoadSchema, {
        ...load,
        urgencyType: 'SCHEDULED',
        ...schedule,
      }) as QuoteLoadParams;
      const err = thrownBy(() => readLoadSchedule(params)) as WaybillError;
      const expected = thrownBy(() =>
        readQuoteRequest(parse({ ...mode, urgencyType: 'SCHEDULED', ...schedule }), true),
      ) as WaybillError;
      expect(err.code).toBe(400);
      expect([err.type, err.message, err.data]).toEqual([
        expected.type,
        expected.message,
        expected.data,
      ]);
    },
  );
});

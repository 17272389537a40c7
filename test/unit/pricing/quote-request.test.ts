import type { WaybillError } from '../../../libs/errors';
import { thrownBy } from '../helpers';
import {
  MODE_MISSING,
  MODE_NEEDS_USER,
  quoteRequestSchema,
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
    expect(clash.message).toBe('deliverySlot and slot disagree; send one');
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

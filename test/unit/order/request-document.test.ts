import fc from 'fast-check';
import { validate } from '../../../libs/validation';
import { ComponentSchemas } from '../../../services/gateway/json-schema';
import { requestParams } from '../../../services/order/schemas';
import { readDeliveryRequest, type RequestParams } from '../../../services/order/request-input';
import { quoteRequestSchema } from '../../../services/pricing/quote-request';
import { meetsRules, thrownBy } from '../helpers';

/**
 * `POST /api/request`'s documented rules against what the order service accepts: joi, then
 * `readDeliveryRequest`. A body the document allows must not be refused for its shape (only
 * for what data decides: packages, wallet, couriers, places), and a body it refuses must be.
 */
const owner = { name: 'Shop', phone: '+2348012345678', email: 'shop@example.com' };
const document = new ComponentSchemas().convert(requestParams);
const COURIER = '7a0d5d44-2f7c-4b7e-8d4e-1c2b3a4d5e6f';

function serviceAccepts(body: Record<string, unknown>): boolean {
  try {
    readDeliveryRequest(validate(requestParams, body) as RequestParams, owner);
    return true;
  } catch {
    return false;
  }
}

const contacts = { Name: 'Ada Obi', Phone: '+2348031234567', Email: 'ada@example.com' };
type ContactField = keyof typeof contacts;
const someContacts = fc.subarray(Object.keys(contacts) as ContactField[]);

/** Bodies of well-formed fields in every combination (an alias in either spelling, or both alike). */
const bodies = fc
  .record(
    {
      urgencyType: fc.constantFrom('STANDARD', 'PRIORITY', 'SCHEDULED'),
      deliveryDate: fc.constant('2030-01-15'),
      payOnDelivery: fc.boolean(),
      podRemitTo: fc.constantFrom('MY_WALLET', 'COURIER_WALLET'),
      podCourierProfileId: fc.constant(COURIER),
    },
    { requiredKeys: [] },
  )
  .chain((fields) =>
    fc
      .record({
        courierSelection: fc.constantFrom('ANYONE', 'SPECIFIC', 'MERCHANT_SPECIAL_COURIERS'),
        slotFields: fc.subarray(['deliverySlot', 'slot']),
        courierFields: fc.subarray(['courierId', 'courierProfileId']),
        linkFields: fc.subarray(['link3rdPartyByContactInfo', 'notify3rdParty']),
        onBody: someContacts,
        onDestination: fc.option(someContacts, { nil: undefined }),
      })
      .map(({ slotFields, courierFields, linkFields, onBody, onDestination, ...rest }) => ({
        origin: 'Ikeja, Lagos',
        destination: onDestination
          ? {
              address: 'Wuse 2, Abuja',
              ...Object.fromEntries(onDestination.map((f) => [`contact${f}`, contacts[f]])),
            }
          : 'Wuse 2, Abuja',
        ...Object.fromEntries(onBody.map((f) => [`destinationContact${f}`, contacts[f]])),
        packagesId: ['0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21'],
        type: 'DROP_OFF',
        ...fields,
        ...rest,
        ...Object.fromEntries(slotFields.map((f) => [f, '09:00 - 12:00'])),
        ...Object.fromEntries(courierFields.map((f) => [f, COURIER])),
        ...Object.fromEntries(linkFields.map((f) => [f, true])),
      })),
  );

const valid = {
  origin: 'Ikeja, Lagos',
  destination: { address: 'Wuse 2, Abuja', contactName: 'Ada', contactPhone: '+2348031234567' },
  destinationContactEmail: 'ada@example.com',
  packagesId: ['0d4f3f7a-8a0e-4b51-9a43-6c6f3b0a1e21'],
  type: 'DROP_OFF',
  courierSelection: 'ANYONE',
};

describe('the documented rules of POST /api/request', () => {
  it('accept exactly the bodies the service accepts (property)', () => {
    fc.assert(
      fc.property(bodies, (body) => {
        expect(meetsRules(document, body)).toBe(serviceAccepts(body));
      }),
      { numRuns: 3000 },
    );
  });

  it.each<[string, Record<string, unknown>]>([
    ['a recipient contact neither on the body nor on destination', { destination: 'Wuse 2' }],
    ['SCHEDULED without a slot', { urgencyType: 'SCHEDULED', deliveryDate: '2030-01-15' }],
    ['a date without SCHEDULED', { deliveryDate: '2030-01-15' }],
    ['SPECIFIC without a courier', { courierSelection: 'SPECIFIC' }],
    [
      'a courier without SPECIFIC',
      { courierSelection: 'MERCHANT_SPECIAL_COURIERS', courierId: COURIER },
    ],
    ['podRemitTo without payOnDelivery', { podRemitTo: 'MY_WALLET' }],
    ['a courier wallet without its courier', { payOnDelivery: true, podRemitTo: 'COURIER_WALLET' }],
    [
      'a pay-on-delivery courier for my wallet',
      { payOnDelivery: true, podCourierProfileId: COURIER },
    ],
    [
      'two spellings of the link flag that disagree',
      { link3rdPartyByContactInfo: true, notify3rdParty: false },
    ],
  ])('refuse %s, as the service does', (_name, change) => {
    const body = { ...valid, ...change };
    expect(meetsRules(document, body)).toBe(false);
    expect(serviceAccepts(body)).toBe(false);
  });

  it('ask for one spelling of an alias, as the service does, naming both', () => {
    const both = { ...valid, link3rdPartyByContactInfo: true, notify3rdParty: true };
    expect(meetsRules(document, both)).toBe(false);
    expect(serviceAccepts(both)).toBe(false);
    const refusal = thrownBy(() =>
      readDeliveryRequest(validate(requestParams, both) as RequestParams, owner),
    );
    expect(refusal).toMatchObject({
      data: {
        errors: [
          {
            field: 'notify3rdParty',
            message:
              'link3rdPartyByContactInfo and notify3rdParty are two spellings of one field; send only one',
          },
        ],
      },
    });
  });

  it('allow a pay-on-delivery courier wallet with its courier, and contacts from both places', () => {
    const body = {
      ...valid,
      payOnDelivery: true,
      podRemitTo: 'COURIER_WALLET',
      podCourierProfileId: COURIER,
    };
    expect(meetsRules(document, body)).toBe(true);
    expect(serviceAccepts(body)).toBe(true);
  });
});

describe('the schedule of POST /api/request', () => {
  const fieldErrors = (schema: typeof requestParams, body: object) =>
    (
      thrownBy(() => validate(schema, body)) as {
        data: { errors: { field: string; message: string }[] };
      }
    ).data.errors.filter((e) => /^(deliveryDate|deliverySlot|slot)$/.test(e.field));
  const quote = {
    origin: 'Ikeja, Lagos',
    destination: 'Wuse 2, Abuja',
    totalWeight: 1,
    totalValue: 1,
  };

  it.each<[string, Record<string, unknown>]>([
    ['a date that is no calendar date', { urgencyType: 'SCHEDULED', deliveryDate: '2026-02-30' }],
    ['a date in another form', { urgencyType: 'SCHEDULED', deliveryDate: '15/01/2030' }],
    [
      'a slot that ends before it starts',
      { urgencyType: 'SCHEDULED', deliverySlot: '12:00 - 09:00' },
    ],
    ['a slot alias that is no window', { urgencyType: 'SCHEDULED', slot: 'morning' }],
    ['a date without SCHEDULED', { urgencyType: 'PRIORITY', deliveryDate: '2030-01-15' }],
    ['a slot without SCHEDULED', { deliverySlot: '09:00 - 12:00' }],
  ])('is refused for %s with the words of POST /api/pricing', (_name, fields) => {
    const errors = fieldErrors(requestParams, { ...valid, ...fields });
    expect(errors).toHaveLength(1);
    expect(errors).toEqual(fieldErrors(quoteRequestSchema, { ...quote, ...fields }));
  });

  it('is read in its canonical spelling, as pricing prices it', () => {
    const body = {
      ...valid,
      urgencyType: 'SCHEDULED',
      deliveryDate: '2030-01-15',
      slot: '09:00-12:00',
    };
    const read = readDeliveryRequest(validate(requestParams, body) as RequestParams, owner);
    expect(read.schedule).toEqual({ date: '2030-01-15', slot: '09:00 - 12:00' });
  });
});

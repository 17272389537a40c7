import type { FieldError } from './errors';

/**
 * The checks across fields that a quote (`POST /api/pricing`) and a delivery request
 * (`POST /api/request`) share: one spelling of an aliased field, a courier exactly when
 * SPECIFIC, a date and a slot when SCHEDULED. Each adds what is wrong to `errors`, so that
 * a 400 names every problem at once, with the same words on both paths.
 */

/**
 * One of two spellings of a field, never both, even alike: the document asks for one
 * (`notBoth`), and a body that the document refuses is refused.
 */
export function aliased<T>(
  errors: FieldError[],
  [name, value]: [string, T | undefined],
  [aliasName, aliasValue]: [string, T | undefined],
): T | undefined {
  if (value !== undefined && aliasValue !== undefined) {
    errors.push({
      field: aliasName,
      message: `${name} and ${aliasName} are two spellings of one field; send only one`,
    });
  }
  return value ?? aliasValue;
}

/** The SPECIFIC courier (`courierId`, alias `courierProfileId`), required then and only then. */
export function readCourierId(
  errors: FieldError[],
  p: { courierSelection: string; courierId?: string; courierProfileId?: string },
): string | undefined {
  const courierId = aliased(
    errors,
    ['courierId', p.courierId],
    ['courierProfileId', p.courierProfileId],
  );
  if (p.courierSelection === 'SPECIFIC' && !courierId) {
    errors.push({
      field: 'courierId',
      message: 'courierId is required when courierSelection is SPECIFIC',
    });
  }
  if (p.courierSelection !== 'SPECIFIC' && courierId) {
    // Named as it was sent: a client that spelled it courierProfileId never sent courierId.
    const sent = p.courierId === undefined ? 'courierProfileId' : 'courierId';
    errors.push({
      field: sent,
      message: `${sent} applies only when courierSelection is SPECIFIC`,
    });
  }
  return courierId;
}

/** A SCHEDULED delivery's date and slot text (`deliverySlot`, alias `slot`), required then. */
export function readScheduleText(
  errors: FieldError[],
  p: { urgencyType: string; deliveryDate?: string; deliverySlot?: string; slot?: string },
): { date: string; slot: string } | undefined {
  const slot = aliased(errors, ['deliverySlot', p.deliverySlot], ['slot', p.slot]);
  if (p.urgencyType !== 'SCHEDULED') return undefined;
  if (!p.deliveryDate) {
    errors.push({
      field: 'deliveryDate',
      message: 'deliveryDate is required when urgencyType is SCHEDULED',
    });
  }
  if (!slot) {
    errors.push({
      field: 'deliverySlot',
      message: 'deliverySlot is required when urgencyType is SCHEDULED',
    });
  }
  return p.deliveryDate && slot ? { date: p.deliveryDate, slot } : undefined;
}

/**
 * The checks above as JSON Schema keywords, for the OpenAPI document (`documented()` in
 * libs/schemas): what a body must hold for them to pass, one spelling of an alias included.
 */
export const present = (field: string) => ({ required: [field] });
export const noneOf = (...fields: string[]) => ({ not: { anyOf: fields.map(present) } });
export const equals = (field: string, value: string | boolean) => ({
  required: [field],
  properties: { [field]: { const: value } },
});
export const notBoth = (field: string, alias: string) => ({ not: { required: [field, alias] } });

/** `readScheduleText`: a date and a slot when SCHEDULED (joi refuses them otherwise). */
export const SCHEDULE_RULES = [
  {
    if: equals('urgencyType', 'SCHEDULED'),
    then: { ...present('deliveryDate'), anyOf: [present('deliverySlot'), present('slot')] },
  },
  notBoth('deliverySlot', 'slot'),
];

/** `readCourierId`: a courier exactly when SPECIFIC. */
export const COURIER_RULES = [
  {
    if: equals('courierSelection', 'SPECIFIC'),
    then: { anyOf: [present('courierId'), present('courierProfileId')] },
    else: noneOf('courierId', 'courierProfileId'),
  },
  notBoth('courierId', 'courierProfileId'),
];

import {
  ADDRESS_TEXT_LIMITS,
  PRESERVED_STRING_MAX,
  PRESERVED_STRINGS,
} from '../../libs/contracts/geo';
import { PERSON_NAME_MAX } from '../../libs/schemas';
import { NOTE_MAX } from '../../services/order/schemas';
import { widest } from './message-size';

/** 254 characters, the most an e-mail address may have, and valid. */
export const LONGEST_EMAIL = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(56)}.com`;

/** An address input at `lat`, `lon` with every text at its limit: the largest stop there may be. */
export const largestAddressInput = (lat: number, lon: number) => ({
  lat,
  lon,
  ...Object.fromEntries(
    Object.entries(ADDRESS_TEXT_LIMITS).map(([name, limit]) => [name, widest(limit)]),
  ),
  ...Object.fromEntries(PRESERVED_STRINGS.map((name) => [name, widest(PRESERVED_STRING_MAX)])),
  contactPhone: '+2348031234567',
  contactEmail: LONGEST_EMAIL,
});

/** A delivery request's own texts, each at its limit. */
export const LARGEST_REQUEST_TEXTS = {
  note: widest(NOTE_MAX),
  originContactName: widest(PERSON_NAME_MAX),
  originContactEmail: LONGEST_EMAIL,
  destinationContactName: widest(PERSON_NAME_MAX),
  destinationContactEmail: LONGEST_EMAIL,
};

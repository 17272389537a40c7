import Joi, { characterCount } from '../../libs/joi';
import { OFFER_OUTCOMES } from './matching-rules';
import { HOSTED_URL_MAX, hostedUrlPattern, parseHostedUrl } from '../../libs/contracts/file';
import { latitude, longitude } from '../../libs/contracts/geo';
import { COURIER_TOKENS, type CourierFleet } from '../../libs/contracts/matching';
import {
  documented,
  e164Phone,
  fromUrl,
  HTTPS_URL_PATTERN,
  isHttpsUrl,
  makerFields,
  pageParams,
  PERSON_NAME_MAX,
  personName,
  plainText,
  trimmedMatch,
  uuid,
  view,
} from '../../libs/schemas';

/** Params and answers of the courier directory's actions; the answers are what /openapi.json documents. */

/**
 * Longest texts of a courier, in characters. With MERCHANT_COURIERS_MAX and the largest
 * admin page they bound the size of a list, which must fit in one NATS message (decision 33;
 * test/unit/courier-matching/list-size).
 */
export const COURIER_TEXT_LIMITS = {
  name: PERSON_NAME_MAX,
  regNo: 20,
  make: 30,
  model: 30,
  colour: 30,
  profilePhoto: HOSTED_URL_MAX,
};

/**
 * Couriers one merchant may keep on its own list. `courier-matching.merchantCouriers`
 * answers the whole list in one message, and a delivery is offered to these couriers.
 */
export const MERCHANT_COURIERS_MAX = 200;

/**
 * A vehicle registration number, stored trimmed and upper-case so that `lsd 482 xy ` and
 * `LSD 482 XY` are one vehicle: letters and digits in groups joined by one space or hyphen
 * (`LSD 482 XY`, `ABJ-123-KY`). Spaces and hyphens are kept as sent: plates are written both
 * ways, and guessing which is the same plate is not ours to do.
 */
export const regNo = () =>
  trimmedMatch(
    Joi.string().max(COURIER_TEXT_LIMITS.regNo).trim().uppercase(),
    'regNo',
    '[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*',
    'must be letters and digits, in groups separated by one space or hyphen, like LSD-482-XY',
  );

const ASCII_URL = /^[\x21-\x7e]*$/;

/**
 * A courier's photo: an https URL as a browser writes it (`isHttpsUrl`), or a file uploaded to this platform (whose CDN may be
 * plain http in development). ASCII only, as URLs are sent percent-encoded, so that the
 * length bounds the bytes.
 */
export const profilePhoto = (cdnBaseUrl: string) =>
  documented(Joi.string().max(COURIER_TEXT_LIMITS.profilePhoto), {
    format: 'uri',
    pattern: '^[\\x21-\\x7e]*$',
    anyOf: [{ pattern: HTTPS_URL_PATTERN.source }, { pattern: hostedUrlPattern(cdnBaseUrl) }],
  })
    .custom((value: string, helpers) => {
      // Too long is already said by `max`; one problem, one message.
      if (characterCount(value) > COURIER_TEXT_LIMITS.profilePhoto) return value;
      if (!ASCII_URL.test(value)) return helpers.error('string.asciiUrl');
      const accepted = isHttpsUrl(value) || parseHostedUrl(value, cdnBaseUrl).ok;
      return accepted ? value : helpers.error('string.photoUrl');
    })
    .messages({
      'string.asciiUrl':
        '{{#label}} must be a URL without spaces or non-ASCII characters: percent-encode them, as browsers do when they copy a URL',
      'string.photoUrl': `{{#label}} must be an https URL as a browser writes it (a lower-case host name, a path, no user name or IP address), or the URL of a file uploaded with POST /file/single-upload (${cdnBaseUrl}/uploads/...)`,
    });

const fleetFields = {
  typeId: uuid().description('A fleet type id (`GET /admin/fleet-types`)'),
  regNo: regNo(),
  make: plainText(COURIER_TEXT_LIMITS.make).min(1),
  model: plainText(COURIER_TEXT_LIMITS.model).min(1),
  colour: plainText(COURIER_TEXT_LIMITS.colour).min(1),
};

const courierFleetView = view('CourierFleet', {
  typeId: uuid(),
  regNo: Joi.string().description('Upper case, trimmed; unique among couriers'),
  make: Joi.string(),
  model: Joi.string(),
  colour: Joi.string(),
});

const courierLocationView = view('CourierLocation', {
  lat: Joi.number(),
  lon: Joi.number(),
  at: Joi.string().isoDate().description('When the courier reported it'),
});

export const courierView = view('Courier', {
  id: uuid().description('The courier profile id'),
  name: Joi.string(),
  phone: Joi.string().description('E.164'),
  profilePhoto: Joi.string().uri().allow(null),
  fleet: courierFleetView,
  active: Joi.boolean().description('Only active couriers are offered deliveries'),
  virtual: Joi.boolean().description(
    'The sandbox’s courier of one simulated delivery (staging): offered that delivery only, and named by no request',
  ),
  lastLocation: courierLocationView
    .allow(null)
    .description('Null until the courier reports a location to matching'),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

/** Refused with its reason rather than as an unknown key. */
const readOnlyLocation = Joi.object({
  lastLocation: Joi.any().forbidden().messages({
    'any.unknown': 'lastLocation is what the courier last reported to matching; it cannot be set',
  }),
});

export interface NewCourier {
  id?: string;
  name: string;
  phone: string;
  profilePhoto: string | null;
  fleet: CourierFleet;
  active: boolean;
}

export const createCourierParams = (cdnBaseUrl: string) =>
  Joi.object<NewCourier, true>({
    id: uuid().description(
      'The courier profile id, when the courier already has one (in the courier app); a new one otherwise',
    ),
    name: personName().required(),
    phone: e164Phone().required(),
    profilePhoto: profilePhoto(cdnBaseUrl).allow(null).default(null),
    fleet: Joi.object<CourierFleet, true>({
      typeId: fleetFields.typeId.required(),
      regNo: fleetFields.regNo.required(),
      make: fleetFields.make.required(),
      model: fleetFields.model.required(),
      colour: fleetFields.colour.required(),
    }).required(),
    active: Joi.boolean().default(true),
  })
    .concat(readOnlyLocation)
    .example({
      name: 'Tunde Bakare',
      phone: '+2348031234567',
      profilePhoto: null,
      fleet: {
        typeId: '3f1c2a8e-9b7d-4c6e-8f0a-1b2c3d4e5f60',
        regNo: 'LSD-482-XY',
        make: 'Bajaj',
        model: 'Boxer',
        colour: 'Red',
      },
    });

export interface CourierChanges {
  courierId: string;
  name?: string;
  phone?: string;
  profilePhoto?: string | null;
  fleet?: Partial<CourierFleet>;
  active?: boolean;
}

const CHANGEABLE = ['name', 'phone', 'profilePhoto', 'fleet', 'active'];

export const updateCourierParams = (cdnBaseUrl: string) =>
  Joi.object<CourierChanges, true>({
    courierId: uuid().required(),
    name: personName(),
    phone: e164Phone(),
    profilePhoto: profilePhoto(cdnBaseUrl).allow(null),
    // joi-to-json leaves an object's `min` out of the document: stated here.
    fleet: documented(Joi.object<Partial<CourierFleet>, true>(fleetFields).min(1), {
      minProperties: 1,
    }).description('Only the fleet fields to change'),
    active: Joi.boolean(),
  })
    .concat(readOnlyLocation)
    .example({ phone: '+2348031234567', fleet: { colour: 'Blue' }, active: true })
    .or(...CHANGEABLE)
    .messages({
      'object.missing': `Send at least one of ${CHANGEABLE.join(', ')}`,
    });

export interface ListCouriersParams {
  active?: boolean;
  fleetTypeId?: string;
  regNo?: string;
  virtual?: boolean;
  limit: number;
  offset: number;
}

export const listCouriersParams = Joi.object<ListCouriersParams, true>({
  active: fromUrl(Joi.boolean()).description('Only active (true) or inactive (false) couriers'),
  fleetTypeId: uuid().description('Only couriers with this fleet type'),
  regNo: regNo().description('Only the courier with this registration number, in any case'),
  virtual: fromUrl(Joi.boolean()).description(
    'true: only the virtual couriers of simulated deliveries (outside live), which are left out otherwise',
  ),
  ...pageParams(),
});

export interface MerchantCourierParams {
  userId: string;
  courierId: string;
}

export const merchantCourierParams = Joi.object<MerchantCourierParams, true>({
  userId: uuid().required(),
  courierId: uuid().required(),
});

/**
 * Tokens one courier may hold at once: a phone or two and a spare. The list of them answers
 * in one message whatever happens.
 */
export const COURIER_TOKENS_MAX = 10;

export const tokenIdParams = Joi.object<{ tokenId: string }, true>({
  tokenId: uuid().required(),
});

const tokenMaker = makerFields();

export const courierTokenView = view('CourierToken', {
  id: uuid().description('The token’s id: revoke it with `DELETE /admin/courier-tokens/{id}`'),
  courierId: uuid(),
  createdAt: Joi.string().isoDate(),
  ...tokenMaker,
  lastUsedAt: Joi.string()
    .isoDate()
    .allow(null)
    .description(
      'When a gateway last looked the token up, to the nearest 10 minutes; null if never',
    ),
});

export const createdCourierTokenView = view('CreatedCourierToken', {
  id: uuid().description('The token’s id'),
  courierId: uuid(),
  token: Joi.string()
    .pattern(COURIER_TOKENS.pattern)
    .description(
      'The token itself, for the courier app’s `Authorization: Bearer <token>`. Shown only in this answer: the platform keeps its SHA-256',
    ),
  createdAt: Joi.string().isoDate(),
  ...tokenMaker,
});

export interface LocationReport {
  lat: number;
  lon: number;
}

export const locationParams = Joi.object<LocationReport, true>({
  lat: latitude().required().description('Degrees north, WGS 84'),
  lon: longitude().required().description('Degrees east, WGS 84'),
}).example({ lat: 6.5244, lon: 3.3792 });

export const reportedLocationView = view('ReportedLocation', {
  lat: Joi.number(),
  lon: Joi.number(),
  at: Joi.string().isoDate().description('When the platform took the report'),
});

export const offerIdParams = Joi.object<{ offerId: string }, true>({
  offerId: uuid().required(),
});

const point = Joi.object({ lat: Joi.number(), lon: Joi.number() });

export const offerView = view('CourierOffer', {
  id: uuid(),
  deliveryId: uuid(),
  status: Joi.string().valid('OPEN', ...OFFER_OUTCOMES),
  pickup: point,
  dropoff: point.description(
    'The drop-off’s area: the middle of its 0.01° cell (about 1 km); its address comes with the delivery once accepted',
  ),
  totalWeight: Joi.string().description('What the packages weigh, kg with five decimals'),
  offeredAt: Joi.string().isoDate(),
  expiresAt: Joi.string()
    .isoDate()
    .description('Accept before this, or the offer goes to the next courier'),
});

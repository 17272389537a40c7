import Joi, { characterCount } from '../../libs/joi';
import { HOSTED_URL_MAX, hostedUrlPattern, parseHostedUrl } from '../../libs/contracts/file';
import { PACKAGE_SIZES, type PackageSize } from '../../libs/contracts/package';
import { documented, naira, named, plainText, uuid, view } from '../../libs/schemas';

/** Params and answers of the package actions; the answers are what /openapi.json documents. */

/**
 * Longest texts of a package, in characters (code points, libs/joi). Our own file URLs are
 * about 100 characters. With PACKAGE_MAX_OPEN they bound the size of `GET /api/packages`.
 */
export const PACKAGE_TEXT_LIMITS = {
  packageType: 60,
  name: 120,
  description: 128,
  image: HOSTED_URL_MAX,
};

export const packageView = view('Package', {
  id: uuid(),
  userId: uuid(),
  p2pDeliveryId: uuid().allow(null),
  errandDeliveryId: uuid().allow(null),
  errandStoreId: uuid().allow(null),
  productId: uuid().allow(null),
  variantCombinationId: uuid().allow(null),
  packageType: Joi.string(),
  name: Joi.string(),
  image: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
  quantity: Joi.number().integer(),
  weight: Joi.string().description('kg, five decimals: size weight × quantity'),
  value: Joi.string().description('NGN, two decimals: total value'),
  size: Joi.string().valid(...PACKAGE_SIZES),
  type: Joi.string().valid('PACKAGE_ITEM'),
  selectedOptions: Joi.array()
    .max(0)
    .description('Always empty: Waybill keeps no product options (docs/api-conventions.md)'),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
  deletedAt: Joi.string().isoDate().allow(null),
});

/**
 * A URL of a file uploaded to this platform, by the file service's own rule, taken as sent (as a
 * download's is): untrimmed, so that the document's pattern is exactly the check.
 */
const hostedImage = (cdnBaseUrl: string) =>
  documented(Joi.string().max(PACKAGE_TEXT_LIMITS.image), {
    pattern: hostedUrlPattern(cdnBaseUrl),
  })
    .custom((value: string, helpers) => {
      // Too long is already said by `max`; one problem, one message.
      if (characterCount(value) > PACKAGE_TEXT_LIMITS.image) return value;
      const parsed = parseHostedUrl(value, cdnBaseUrl);
      return parsed.ok ? value : helpers.error('string.hostedUrl', { reason: parsed.reason });
    })
    .messages({
      'string.hostedUrl': `{{#label}} must be the URL of an uploaded file (${cdnBaseUrl}/uploads/...): {{#reason}}; upload it with POST /file/single-upload`,
    });

export interface SaveParams {
  packageId?: string;
  packageType?: string;
  name?: string;
  image?: string | null;
  description?: string | null;
  quantity?: number;
  size?: PackageSize;
  value?: number;
  weight?: never;
}

/** The fields of a package; a new one needs all but `image` and `description`. */
const packageFields = (cdnBaseUrl: string) => ({
  packageType: plainText(PACKAGE_TEXT_LIMITS.packageType).min(1),
  name: plainText(PACKAGE_TEXT_LIMITS.name).min(1),
  image: hostedImage(cdnBaseUrl).allow(null),
  description: plainText(PACKAGE_TEXT_LIMITS.description).allow(null, ''),
  quantity: Joi.number().integer().min(1).max(10_000),
  size: Joi.string().valid(...PACKAGE_SIZES),
  value: naira().min(0).max(1e11),
  weight: Joi.any().forbidden().messages({
    'any.unknown': 'weight is derived from size and quantity; do not send it',
  }),
});

const CHANGEABLE = ['packageType', 'name', 'image', 'description', 'quantity', 'size', 'value'];

/**
 * Without `packageId` a new package (every required field); with it an edit (at least one
 * field). Two shapes, so that the document names both (`NewPackage`, `PackageChange`).
 */
export function saveParams(cdnBaseUrl: string): Joi.AlternativesSchema<SaveParams> {
  const fields = packageFields(cdnBaseUrl);
  return Joi.alternatives().conditional('.packageId', {
    is: Joi.exist(),
    then: named(
      'PackageChange',
      Joi.object({ packageId: uuid().required(), ...fields })
        .or(...CHANGEABLE)
        .messages({ 'object.missing': 'send at least one field to change' }),
    ),
    otherwise: named(
      'NewPackage',
      Joi.object(fields)
        .fork(['packageType', 'name', 'quantity', 'size', 'value'], (f) => f.required())
        .example({
          packageType: 'Documents',
          name: 'Signed contract',
          description: 'Two envelopes',
          quantity: 2,
          size: 'SMALL',
          value: 15000,
        }),
    ),
  });
}

export const packageIdParams = Joi.object<{ packageId: string }, true>({
  packageId: uuid().required(),
});

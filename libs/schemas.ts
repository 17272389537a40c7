import Joi from 'joi';

/** Field schemas shared by several services, so one rule reads the same everywhere. */

/**
 * A UUID in its usual spelling, of any version (the OpenAPI `format: uuid`): ours are v4 and
 * v5 (libs/ids), other systems' ids (couriers, profiles) may be any. The pattern is what the
 * document states, character for character; joi's `guid()` would also take braces or no
 * hyphens and refuse some versions the document allows.
 */
export const UUID_PATTERN =
  /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const uuid = () =>
  Joi.string()
    .pattern(UUID_PATTERN)
    .lowercase()
    .meta({ format: 'uuid' })
    .messages({ 'string.pattern.base': '{{#label}} must be a valid GUID' });

/**
 * An ISO 3166-1 alpha-2 code, either case, answered upper-case. No trimming: the document's
 * pattern is the whole rule.
 */
export const countryCode = () =>
  Joi.string()
    .pattern(/^[A-Za-z]{2}$/)
    .uppercase()
    .messages({
      'string.pattern.base': '{{#label}} must be a two-letter ISO country code like NG',
    });

export const e164Phone = () =>
  Joi.string()
    .trim()
    .pattern(/^\+[1-9]\d{6,14}$/)
    .messages({
      'string.pattern.base': '{{#label}} must be an E.164 phone number like +2348012345678',
    });

export const email = () => Joi.string().trim().lowercase().email({ tlds: false }).max(254);

export const personName = () => Joi.string().trim().min(1).max(120);

/** `limit` and `offset` of a paged list: a page never outgrows one NATS message. */
export const pageParams = () => ({
  limit: Joi.number().integer().min(1).max(500).default(100),
  offset: Joi.number().integer().min(0).max(1_000_000).default(0),
});

/**
 * Text people type: trimmed, at most `max` characters, no control characters but tabs and
 * line breaks, no lone surrogates (JSON would write either as six bytes, and neither is meant).
 */
export const plainText = (max: number) =>
  Joi.string()
    .trim()
    .max(max)
    .custom((value: string, helpers) =>
      // In unicode mode a lone surrogate is its own code point, of category Cs.
      /\p{Cs}|(?![\t\n\r])\p{Cc}/u.test(value) ? helpers.error('string.plainText') : value,
    )
    .messages({
      'string.plainText':
        '{{#label}} must be plain text: no control characters other than tabs and line breaks',
    });

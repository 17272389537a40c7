import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import Joi from './joi';
import { UNSHOWN } from './text';

/** Field schemas shared by several services, so one rule reads the same everywhere. */

/** Meta key of the keywords a schema carries for the OpenAPI document (gateway/json-schema). */
export const DOCUMENT_KEYWORDS = 'x-document';

/**
 * Characters that JavaScript's `trim()` removes (ECMAScript WhiteSpace and LineTerminator),
 * for regular expressions of the document: the `\s` of other engines differs at U+0085 and
 * U+FEFF.
 */
export const TRIMMED_CHARACTERS =
  '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';

/** A character that trimming keeps: a trimmed string that matches it is not empty. */
export const NOT_BLANK = `[^${TRIMMED_CHARACTERS}]`;

/** A character that trimming takes away, for the blanks a pattern allows around its text. */
export const BLANK = `[${TRIMMED_CHARACTERS}]`;

/** Meta key of a schema's name in the OpenAPI document (gateway/json-schema). */
export const COMPONENT_NAME = 'x-component';

/**
 * Names a schema in the OpenAPI document: it is kept once under `components.schemas` and
 * referred to by `$ref` wherever it is used, so that client generators make one named type.
 * A name means one schema; `.allow(null)` on a named one refers to it or null.
 */
export function named<T extends Joi.Schema>(name: string, schema: T): T {
  // Its own presence, so that the component reads the same wherever it is used.
  const own = (schema.describe().preferences as { presence?: string } | undefined)?.presence;
  return schema.prefs({ presence: (own ?? 'optional') as 'optional' }).meta({
    [COMPONENT_NAME]: name,
  }) as T;
}

/**
 * A named object as the API answers it, for the document: every field present (with null
 * where it has no value) unless marked `.optional()`.
 */
export const view = (name: string, keys: Joi.PartialSchemaMap) =>
  named(name, Joi.object(keys).prefs({ presence: 'required' }));

/** Key that marks a joi schema inside `documented()` keywords. */
export const EMBEDDED_SCHEMA = 'x-joi';

/** A joi schema inside `documented()` keywords: the document shows its JSON Schema there. */
export const schemaOf = (schema: Joi.Schema) => ({ [EMBEDDED_SCHEMA]: schema });

/**
 * States in the OpenAPI document, as JSON Schema keywords, a rule that the handler checks
 * rather than joi (across fields, or against configuration), so the document tells the truth.
 */
export const documented = <T extends Joi.Schema>(schema: T, keywords: Record<string, unknown>): T =>
  schema.meta({ [DOCUMENT_KEYWORDS]: keywords }) as T;

/**
 * A text that matches `body` once `schema` has trimmed it (and changed its case, if it does):
 * the document's pattern allows around it the blanks that trimming takes away. The rule is one
 * of its own (`string.<name>`, `{{#label}} <message>`) rather than joi's pattern(), which the
 * document would state without the blanks.
 */
export function trimmedMatch<T extends Joi.StringSchema>(
  schema: T,
  name: string,
  body: string,
  message: string,
): T {
  const whole = new RegExp(`^${body}$`);
  return documented(schema, { pattern: `^${BLANK}*${body}${BLANK}*$` })
    .custom((value: string, helpers) =>
      whole.test(value) ? value : helpers.error(`string.${name}`),
    )
    .messages({ [`string.${name}`]: `{{#label}} ${message}` }) as T;
}

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
/** Params of a route about one user: `/users/:userId/...`. */
/** Who made a credential (`makerOf`), as its views show them. */
export const makerFields = () => ({
  createdBy: Joi.string()
    .allow(null)
    .description(
      'The operator who made it, or `admin-token` / `cli` (the platform’s own credentials); null for one made before this was recorded',
    ),
  createdByOperatorTokenId: uuid()
    .allow(null)
    .description(
      'The operator token it was made with (`GET /admin/operator-tokens`); null when made with the platform’s own credentials, or before this was recorded',
    ),
});

export const userIdParams = Joi.object<{ userId: string }, true>({ userId: uuid().required() });

export const countryCode = () =>
  Joi.string()
    .pattern(/^[A-Za-z]{2}$/)
    .uppercase()
    .messages({
      'string.pattern.base': '{{#label}} must be a two-letter ISO country code like NG',
    });

const URL_UNRESERVED = 'A-Za-z0-9._~\\-';
const URL_SUB_DELIMS = "!$&'()*+,;=";
const PERCENT_ENCODED = '%[0-9A-Fa-f]{2}';
/** A label of a host name, lower-case (a browser lower-cases it). */
const HOST_LABEL = '[a-z0-9](?:[a-z0-9-]*[a-z0-9])?';
/** A port other than https's own (a browser drops `:443`), without leading zeros. */
const URL_PORT =
  '(?!443/)(?:0|[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
/** A path segment of RFC 3986's characters, but not `.` or `..` (a browser resolves them). */
const PATH_SEGMENT = `(?!(?:\\.|%2[Ee]){1,2}(?:[/?#]|$))(?:[${URL_UNRESERVED}${URL_SUB_DELIMS}:@]|${PERCENT_ENCODED})*`;

/**
 * An https URL written as a browser writes it (its WHATWG `href`) and as RFC 3986 allows:
 * `https://`, a host name of lower-case labels whose last starts with a letter, a port other
 * than 443, a path of one `/` at least without `.` or `..` segments, then a query and a
 * fragment; any other character percent-encoded, as well as `'` in the query. So it is
 * stored and answered as sent, and what a browser opens. It leaves out what a browser would
 * rewrite (`HTTPS://`, upper-case hosts, `https://a.com` without its `/`, `:443`, `/./`) or
 * percent-encode (blanks, non-ASCII, `{`, `|`), user names and passwords, and IP addresses.
 */
export const HTTPS_URL_PATTERN = new RegExp(
  `^https://(?:${HOST_LABEL}\\.)*[a-z](?:[a-z0-9-]*[a-z0-9])?(?::${URL_PORT})?` +
    `(?:/${PATH_SEGMENT})+` +
    `(?:\\?(?:[${URL_UNRESERVED}!$&()*+,;=:@/?]|${PERCENT_ENCODED})*)?` +
    `(?:#(?:[${URL_UNRESERVED}${URL_SUB_DELIMS}:@/?]|${PERCENT_ENCODED})*)?$`,
);

/** The longest https URL taken. */
const HTTPS_URL_MAX = 2048;

/**
 * An https URL as a browser writes it (`HTTPS_URL_PATTERN`), at most 2048 characters. The
 * pattern is the whole rule, and what the document states: every URL it describes is a URI of
 * RFC 3986 (`format: uri`), which a generator would write far more broadly.
 */
export const httpsUrl = () =>
  Joi.string().max(HTTPS_URL_MAX).pattern(HTTPS_URL_PATTERN).messages({
    'string.pattern.base':
      '{{#label}} must be an https URL as a browser writes it, like https://cdn.example.com/icons/bike.png: a lower-case host name, a path, any other character percent-encoded',
  });

/** Whether `value` is what `httpsUrl()` takes: the same rule, outside a joi schema. */
export function isHttpsUrl(value: string): boolean {
  return value.length <= HTTPS_URL_MAX && HTTPS_URL_PATTERN.test(value);
}

/** An E.164 number's shape: `+`, a country code that does not start with 0, 7 to 15 digits. */
const E164_PATTERN = /^\+[1-9]\d{6,14}$/;

/**
 * A phone number that exists: in E.164 form, as written (`+2348012345678`, not
 * `+234 801 234 5678` nor `+23408012345678`), and valid in its country's numbering plan by
 * libphonenumber's full (`max`) metadata, which checks the number's digits against the
 * plan's ranges; the `min` metadata checks little more than the length, so `+2342000000000`
 * would pass.
 */
function isE164Phone(text: string): boolean {
  if (!E164_PATTERN.test(text)) return false;
  const phone = parsePhoneNumberFromString(text);
  return phone !== undefined && phone.number === text && phone.isValid();
}

/**
 * A phone number that exists, in E.164 form. Taken as sent, untrimmed: the document states
 * the form as its pattern, and the numbering plan, which no pattern can state, in words.
 */
export const e164Phone = () =>
  documented(Joi.string(), {
    pattern: E164_PATTERN.source,
    description:
      "A phone number in E.164 form that exists in its country's numbering plan, like +2348012345678",
  })
    .custom((value: string, helpers) =>
      isE164Phone(value) ? value : helpers.error('string.phone'),
    )
    .messages({
      'string.phone': '{{#label}} must be a valid phone number in E.164 form, like +2348012345678',
    });

/** Characters of an e-mail address's local part, between its dots (RFC 5321 `atext`). */
const ATEXT = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
/** A domain label: letters, digits and inner hyphens, at most 63 characters. */
const LABEL_TAIL = '(?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';

/**
 * An e-mail address as RFC 5321 writes most of them: a dot-separated local part of at most 64
 * characters, `@`, and a domain of two labels or more, the last one starting with a letter.
 * ASCII only; no quoted local parts, no IP literals. The pattern is the whole rule the
 * document states, character for character. No `format: email` beside it: checkers of that
 * format (schemathesis's) refuse some addresses the pattern takes (a label with `--` in its
 * third and fourth places, IDNA's reserved form), and the document must say exactly what is
 * accepted.
 */
export const EMAIL_PATTERN = new RegExp(
  // A negative lookahead for the length: generators (hypothesis, for schemathesis) read a
  // positive one as text to write.
  `^(?![^@]{65})${ATEXT}+(?:\\.${ATEXT}+)*@(?:[A-Za-z0-9]${LABEL_TAIL}\\.)+[A-Za-z]${LABEL_TAIL}$`,
);

/**
 * An e-mail address, stored lower-case. Taken as sent, untrimmed, as a phone number is: the
 * document states its form as a pattern, which has no room for blanks.
 */
export const email = () =>
  Joi.string()
    .max(254)
    .pattern(EMAIL_PATTERN)
    .lowercase()
    .messages({ 'string.pattern.base': '{{#label}} must be a valid email' });

/**
 * A number or boolean read from the URL (query string or path), where every value arrives as
 * text: it is converted (`?limit=5`), as validation converts nowhere else (libs/validation).
 */
export const fromUrl = <T extends Joi.NumberSchema | Joi.BooleanSchema>(schema: T): T =>
  schema.prefs({ convert: true }) as T;

/**
 * A decimal number of at most `places` decimals, as the document's `multipleOf` states; more
 * are refused, not rounded away (validation does not convert, libs/validation), so what is
 * stored is what was sent.
 */
const decimalNumber = (places: number, what: string) =>
  documented(Joi.number().precision(places), { multipleOf: Number(`1e-${places}`) }).messages({
    'number.precision': `{{#label}} is ${what}: at most ${places} decimal places`,
  });

/** An amount in NGN, to the kobo it is kept in. */
export const naira = () => decimalNumber(2, 'NGN to the kobo');

/** A weight in kg, to the gram it is kept in (answers spell it with five decimals). */
export const kilograms = () => decimalNumber(3, 'kg to the gram');

/**
 * The params of a page people open from a link (the tracking and checkout pages): what else
 * the link carries in its query (`fbclid`, `utm_source`, which apps and link shorteners add to
 * links people tap) is ignored, not refused, so that a forwarded link still opens.
 */
export const linkedPage = <T extends Joi.ObjectSchema>(schema: T): T =>
  schema.options({ stripUnknown: { objects: true } });

/** `limit` and `offset` of a paged list: a page never outgrows one NATS message. */
export const pageParams = () => ({
  limit: fromUrl(Joi.number().integer().min(1).max(500).default(100)),
  offset: fromUrl(Joi.number().integer().min(0).max(1_000_000).default(0)),
});

/** The control characters plain text refuses (all but tabs and line breaks), for patterns. */
export const CONTROL_CHARACTERS = '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f';

/**
 * No control characters but tabs and line breaks, once trimmed: how the document states
 * `plainText` (a vertical tab or form feed at an end is trimmed away, not refused).
 */
const PLAIN_TEXT_PATTERN = `^${BLANK}*[^${CONTROL_CHARACTERS}]*${BLANK}*$`;

/** What a `plainText` refusal says. */
export const NOT_PLAIN_TEXT =
  '{{#label}} must be plain text: no control characters other than tabs and line breaks';

/**
 * Text people type: trimmed, at most `max` characters, no control characters but tabs and
 * line breaks, no lone surrogates (JSON would write either as six bytes, and neither is meant).
 */
export const plainText = (max: number) =>
  documented(Joi.string().trim().max(max), { pattern: PLAIN_TEXT_PATTERN })
    .custom((value: string, helpers) =>
      value.search(UNSHOWN) >= 0 ? helpers.error('string.plainText') : value,
    )
    .messages({ 'string.plainText': NOT_PLAIN_TEXT });

/** The longest a person's name may be. */
export const PERSON_NAME_MAX = 120;

/** A person's name as people type it: plain text, so at most four bytes a character in JSON. */
export const personName = () => plainText(PERSON_NAME_MAX).min(1);

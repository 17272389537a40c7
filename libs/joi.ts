import BaseJoi from 'joi';

/**
 * The one joi of the platform: every schema is built from it (ESLint refuses `joi` elsewhere),
 * so that what the validators accept is what the OpenAPI document states.
 *
 * - A string's `max`, `min` and `length` count characters (Unicode code points), as JSON
 *   Schema's `maxLength`/`minLength` do; joi's own count UTF-16 units, so 40 emoji would be
 *   80 and refused by a `max(60)` the document says they meet.
 * - The upper bound counts the string as the client sent it, the lower bound what is left
 *   after `trim()`: the document's `maxLength` is about the sent text, and its pattern for a
 *   trimmed `min` about the characters between the first and last kept ones.
 * - Strings convert (trim, case) even where validation does not convert (VALIDATION_OPTIONS in
 *   libs/validation: a JSON body's numbers and booleans are taken only as JSON numbers and
 *   booleans); `fromUrl` in libs/schemas opts a number or boolean into conversion.
 */

/**
 * joi's module of shared helpers, where it merges preferences. Its validator calls
 * `preferences` through the module object each time, so the function set below is the one used
 * (in memory: joi's files are left as installed); were an upgrade of joi to stop calling it so,
 * test/unit/libs/joi.test.ts would fail ("are made once").
 */
interface JoiCommon {
  defaults: object;
  preferences(target: object | null | undefined, source: object | null | undefined): object;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- joi's internal module, untyped
const Common = require('joi/lib/common') as JoiCommon;

/**
 * Merged preferences, kept by what was merged into (`target`) and what was merged in (`source`),
 * wherever neither can change, so that a merge already made is the same merge made again:
 * - into `Common.defaults`, options frozen through (`constantOptions`): the settings that a
 *   validation with them starts from;
 * - into settings kept here, a schema's own preferences. joi merges them into the incoming
 *   settings on every validation of that schema, a key left out included, and keeps the result
 *   only under its default options (validator.js `internals.prefs`). Every string of ours
 *   carries `convert: true` (below): a Mode B quote's params cost 36 merges a validation, some
 *   13 % of it (docs/performance.md, "Between services", session 13). A schema's preferences
 *   are replaced when a schema is derived, never changed (joi adds only its own cache symbol,
 *   which a merge drops), and are never settings kept here: `source` is fixed.
 * Kept settings are frozen, so that a write to one would throw rather than reach another
 * validation. Every other merge (`.prefs()`, options not frozen, `$_match`'s copy) is joi's own,
 * made each time as before.
 */
const keptMerges = new WeakMap<object, WeakMap<object, object>>([[Common.defaults, new WeakMap()]]);
const mergePreferences = Common.preferences;
/** Options made by `constantOptions`: frozen, with every object in them. */
const constantOptionsSet = new WeakSet<object>();

Common.preferences = function preferences(target, source) {
  const kept = target && source ? keptMerges.get(target) : undefined;
  if (!kept || !source || (target === Common.defaults && !constantOptionsSet.has(source))) {
    return mergePreferences(target, source);
  }
  let merged = kept.get(source);
  if (!merged) {
    merged = Object.freeze(mergePreferences(target, source));
    kept.set(source, merged);
    keptMerges.set(merged, new WeakMap());
  }
  return merged;
};

/** What `absentKeyIsNothing` reads of a schema: joi's internals, untyped. */
interface SchemaInternals {
  $_terms: Record<string, unknown[] | null | undefined>;
  _cache?: unknown;
  _preferences?: Record<string, unknown> | null;
  _definition: { prepare?: unknown };
  _flags: Record<string, unknown>;
}

interface JoiValidator {
  validate(
    value: unknown,
    schema: SchemaInternals,
    state: unknown,
    prefs: { presence?: string; debug?: boolean },
    overrides?: unknown,
  ): { value: unknown; errors: unknown[] | null };
}

/**
 * Whether joi validating `undefined` against `schema`, under settings whose presence is
 * `optional`, answers `{value: undefined, errors: null}` and does nothing else: the schema has
 * no condition (`when`), cache, failover, preparation, default, result flag or external, does
 * not require or forbid a value, and does not change the presence through preferences of its
 * own (validator.js: such a value is finalised at the presence check, before any rule). Kept
 * by schema: joi's schemas never change once made.
 */
const nothingWhenAbsent = new WeakMap<object, boolean>();
export function absentKeyIsNothing(schema: SchemaInternals): boolean {
  let known = nothingWhenAbsent.get(schema);
  if (known === undefined) {
    const flags = schema._flags;
    known =
      !schema.$_terms.whens?.length &&
      !schema.$_terms.externals?.length &&
      !schema._cache &&
      !schema._definition.prepare &&
      (flags.presence === undefined || flags.presence === 'optional') &&
      !flags._endedSwitch &&
      flags.default === undefined &&
      flags.failover === undefined &&
      flags.result === undefined &&
      schema._preferences?.presence === undefined &&
      schema._preferences?.debug === undefined;
    nothingWhenAbsent.set(schema, known);
  }
  return known;
}

/**
 * joi validates every key of an object schema, one left out included, as fully as one given
 * (helpers, the finalising of a result); an address object has some 50 optional keys
 * (docs/performance.md, "Between services", session 19). A value left out whose schema does
 * nothing for `undefined` is answered here without that. Every schema validates a value
 * through the validator's module object (`$_validate`, `$_match`, the entry), so the function
 * set here is the one used, as with `Common.preferences` above.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- joi's internal module, untyped
const Validator = require('joi/lib/validator') as JoiValidator;
const validateFully = Validator.validate;
/** Off only to compare with joi's own answers (test/unit/libs/joi.test.ts). */
export const absentValues = { answeredHere: true };
Validator.validate = function validate(value, schema, state, prefs, overrides) {
  if (
    value === undefined &&
    absentValues.answeredHere &&
    overrides === undefined &&
    prefs.presence === 'optional' &&
    !prefs.debug &&
    absentKeyIsNothing(schema)
  ) {
    return { value: undefined, errors: null };
  }
  return validateFully(value, schema, state, prefs, overrides);
};

function freezeDeep(value: unknown, seen = new Set<object>()): void {
  if (typeof value !== 'object' || value === null || seen.has(value)) return;
  seen.add(value);
  for (const key of Reflect.ownKeys(value)) {
    const property = Object.getOwnPropertyDescriptor(value, key);
    // A getter could answer differently on the next merge than on the one kept.
    if (property && !('value' in property)) {
      throw new TypeError(`Constant options hold values, not accessors: ${String(key)}`);
    }
    freezeDeep(property?.value, seen);
  }
  Object.freeze(value);
}

/**
 * Validation options that never change, frozen with all they hold: joi's merge of them into its
 * defaults, and of every schema's preferences below, is made once and kept (above) instead of on
 * every validation.
 */
export function constantOptions<T extends BaseJoi.ValidationOptions>(options: T): Readonly<T> {
  freezeDeep(options);
  constantOptionsSet.add(options);
  return options;
}

const COMPARE = {
  '<=': (count: number, limit: number) => count <= limit,
  '>=': (count: number, limit: number) => count >= limit,
  '=': (count: number, limit: number) => count === limit,
} as const;

type Operator = keyof typeof COMPARE;

/** Unicode code points, counted without building an array of them. */
export function characterCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/** A length rule of `name` checked by the `characters` rule below (joi's own `length` method). */
function characters(
  schema: BaseJoi.StringSchema,
  name: string,
  limit: unknown,
  operator: Operator,
) {
  const rule = { name, method: 'characters', args: { limit }, operator };
  return schema.$_addRule(rule);
}

// The extension's helpers are joi's untyped internals; `this` is the string schema.
/* eslint-disable @typescript-eslint/no-explicit-any */
const WithStrings: typeof BaseJoi = BaseJoi.extend((joi: typeof BaseJoi) => ({
  type: 'string',
  base: joi.string().prefs({ convert: true }),
  rules: {
    characters: {
      method: false,
      args: [
        {
          name: 'limit',
          ref: true,
          assert: (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0,
          message: 'must be a non-negative integer',
        },
      ],
      validate(
        value: string,
        helpers: any,
        { limit }: { limit: number },
        { name, operator }: { name: string; operator: Operator },
      ) {
        const sent = typeof helpers.original === 'string' ? helpers.original : value;
        const within =
          (operator !== '>=' ? COMPARE[operator](characterCount(sent), limit) : true) &&
          (operator !== '<=' ? COMPARE[operator](characterCount(value), limit) : true);
        return within ? value : helpers.error(`string.${name}`, { limit, value });
      },
    },
  },
  overrides: {
    max(this: BaseJoi.StringSchema, limit: unknown) {
      return characters(this, 'max', limit, '<=');
    },
    min(this: BaseJoi.StringSchema, limit: unknown) {
      return characters(this, 'min', limit, '>=');
    },
    length(this: BaseJoi.StringSchema, limit: unknown) {
      return characters(this, 'length', limit, '=');
    },
  },
}));

/** The messages a schema's `.messages()` gave, by error code; `_` keeps them out of `describe()`. */
const MESSAGES_FLAG = '_messages';

/**
 * `.messages()` on every type, as joi's own but without its cost: joi keeps messages as a
 * preference, and merges (deep-copying) a schema's preferences into its parent's on every
 * validation of it; an address object cost 17 µs that way (docs/performance.md). Here the
 * messages are the templates of the errors the schema and its children report, once they are
 * reported; an inner schema's own message stays, as with joi's.
 */
const Joi: typeof BaseJoi = WithStrings.extend({
  type: /^/,
  overrides: {
    messages(this: any, messages: Record<string, string>) {
      const compiled = Object.fromEntries(
        Object.entries(messages).map(([code, text]) => [code, WithStrings.expression(text)]),
      );
      const all = { ...this.$_getFlag(MESSAGES_FLAG), ...compiled };
      return this.$_setFlag(MESSAGES_FLAG, all).error((reports: any[]) => {
        for (const report of reports) {
          // joi renders the report with this template, as it would have with its own.
          if (!report.template && all[report.code]) report.template = all[report.code];
        }
        return reports;
      });
    },
  },
});
/* eslint-enable @typescript-eslint/no-explicit-any */

// The types of joi under the same name, so that `Joi.Schema` reads as it always has.
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace Joi {
  export type Schema<T = any> = BaseJoi.Schema<T>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type AnySchema<T = any> = BaseJoi.AnySchema<T>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type ObjectSchema<T = any> = BaseJoi.ObjectSchema<T>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type StringSchema<T = string> = BaseJoi.StringSchema<T>;
  export type NumberSchema<T = number> = BaseJoi.NumberSchema<T>;
  export type BooleanSchema<T = boolean> = BaseJoi.BooleanSchema<T>;
  export type AlternativesSchema<T = any> = BaseJoi.AlternativesSchema<T>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type ValidationOptions = BaseJoi.ValidationOptions;
  export type ValidationError = BaseJoi.ValidationError;
  export type PartialSchemaMap<T = any> = BaseJoi.PartialSchemaMap<T>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type Description = BaseJoi.Description;
  export type CustomHelpers<V = any> = BaseJoi.CustomHelpers<V>; // eslint-disable-line @typescript-eslint/no-explicit-any -- joi's own default
  export type Root = BaseJoi.Root;
}

export default Joi;

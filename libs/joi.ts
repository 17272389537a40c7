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

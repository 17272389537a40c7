import Joi from '../../libs/joi';
import joiToJson from 'joi-to-json';
import { COMPONENT_NAME, DOCUMENT_KEYWORDS, EMBEDDED_SCHEMA, NOT_BLANK } from '../../libs/schemas';

/**
 * joi → JSON Schema (OpenAPI 3.1) for the document, through joi-to-json, with what it does
 * not see made explicit first, so that the document states what the validator enforces:
 *
 * - a string's `length(n)` is `minLength` and `maxLength` n;
 * - `Joi.object()` without keys takes any properties, and a forbidden key of a closed object
 *   is left out;
 * - `integer()` makes an integer wherever it stands among the number's rules, and a number is
 *   within ±`Number.MAX_SAFE_INTEGER` unless `unsafe()`;
 * - a string is never empty unless `''` is allowed, and a trimmed one is at least as long as
 *   its `min` from the first character trimming keeps to the last;
 * - a key required, forbidden or optional depending on a sibling (`.when('sibling', ...)`)
 *   becomes `if`/`then`/`else` on the object, the sibling's default taken into account;
 * - keywords a schema carries for the document (`documented()` in libs/schemas: rules its
 *   handler checks) are merged in.
 *
 * Schemas named with `named('Name', ...)` (libs/schemas) become
 * `$ref: '#/components/schemas/Name'`, the schema itself kept once in `schemas`.
 */

export type JsonSchema = Record<string, unknown>;

type Description = Record<string, unknown> & {
  type?: string;
  flags?: Record<string, unknown>;
  rules?: { name: string; args?: Record<string, unknown> }[];
  keys?: Record<string, Description>;
  metas?: Record<string, unknown>[];
  whens?: When[];
};

interface When {
  ref?: { path: string[]; ancestor?: number };
  is?: Description;
  then?: Description;
  otherwise?: Description;
  switch?: unknown;
}

const ANY_TYPE = ['array', 'boolean', 'number', 'object', 'string', 'null'];

const isDescription = (value: unknown): value is Description =>
  typeof value === 'object' && value !== null && typeof (value as Description).type === 'string';

/** Every description nested in `desc` (keys, items, alternatives, conditions, ...). */
function children(desc: Description): Description[] {
  const found: Description[] = [];
  const collect = (value: unknown) => {
    if (isDescription(value)) found.push(value);
    else if (Array.isArray(value)) value.forEach(collect);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(collect);
  };
  for (const key of ['keys', 'items', 'matches', 'whens', 'patterns', 'ordered', 'shared']) {
    collect(desc[key]);
  }
  return found;
}

/**
 * The keywords of `a` and of `b` together: `allOf` lists are joined, and a keyword both give
 * differently (two patterns) holds as well, through `allOf`.
 */
function mergeKeywords(a: JsonSchema, b: JsonSchema): JsonSchema {
  const merged = { ...a };
  const also: JsonSchema[] = [];
  for (const [key, value] of Object.entries(b)) {
    if (key === 'allOf') also.push(...(value as JsonSchema[]));
    else if (key in merged && JSON.stringify(merged[key]) !== JSON.stringify(value)) {
      also.push({ [key]: value });
    } else merged[key] = value;
  }
  if (also.length > 0) merged.allOf = [...((merged.allOf as JsonSchema[]) ?? []), ...also];
  return merged;
}

/**
 * A schema `documented` twice (a `plainText` given more) carries one meta of keywords each, of
 * which joi-to-json would keep the last: they are merged into the first, and the others dropped.
 */
function foldDocumentKeywords(desc: Description): void {
  const metas = desc.metas ?? [];
  const own = metas.filter((m) => DOCUMENT_KEYWORDS in m);
  if (own.length < 2) return;
  const [first, ...more] = own;
  for (const meta of more) {
    first[DOCUMENT_KEYWORDS] = mergeKeywords(
      first[DOCUMENT_KEYWORDS] as JsonSchema,
      meta[DOCUMENT_KEYWORDS] as JsonSchema,
    );
  }
  desc.metas = metas.filter((m) => !more.includes(m));
}

function addKeywords(desc: Description, keywords: JsonSchema): void {
  const metas = desc.metas ?? [];
  const own = metas.find((m) => DOCUMENT_KEYWORDS in m);
  if (own) own[DOCUMENT_KEYWORDS] = mergeKeywords(own[DOCUMENT_KEYWORDS] as JsonSchema, keywords);
  else desc.metas = [...metas, { [DOCUMENT_KEYWORDS]: keywords }];
}

function explicitStringRules(desc: Description): void {
  const rules = desc.rules ?? [];
  // JSON Schema patterns carry no flags: `/x/i` would be documented as the text `x/i`.
  for (const rule of rules) {
    const regex = rule.name === 'pattern' ? String(rule.args?.regex ?? '') : '';
    if (/\/[a-z]+$/.test(regex)) {
      throw new Error(`pattern ${regex}: JSON Schema has no regex flags; spell it without them`);
    }
  }
  desc.rules = rules.flatMap((rule) =>
    rule.name === 'length'
      ? [
          { name: 'min', args: rule.args },
          { name: 'max', args: rule.args },
        ]
      : [rule],
  );
  // joi refuses '' unless allowed: at least one character, kept by trimming if trimmed.
  const allowsEmpty = (desc.allow as unknown[] | undefined)?.includes('') ?? false;
  if (allowsEmpty) return;
  const trimmed = rules.some((r) => r.name === 'trim' && r.args?.enabled !== false);
  let min = desc.rules.find((r) => r.name === 'min')?.args?.limit as number | undefined;
  if (min === undefined && !rules.some((r) => r.name === 'pattern')) {
    desc.rules.push({ name: 'min', args: { limit: 1 } });
    min = 1;
  }
  if (!trimmed || !min) return;
  addKeywords(desc, {
    pattern: min === 1 ? NOT_BLANK : `${NOT_BLANK}[\\s\\S]{${min - 2},}${NOT_BLANK}`,
  });
}

function integerFirst(desc: Description): void {
  const rules = desc.rules ?? [];
  const integer = rules.find((r) => r.name === 'integer');
  if (integer) desc.rules = [integer, ...rules.filter((r) => r !== integer)];
}

/**
 * joi refuses a number beyond ±`Number.MAX_SAFE_INTEGER` unless it is `unsafe()`: the bound
 * is stated on the side where the number has none of its own (an address's `neLon` of 1e300
 * was refused while the document allowed it).
 */
function safeBounds(desc: Description): void {
  if (desc.flags?.unsafe) return;
  const rules = desc.rules ?? [];
  const has = (...names: string[]) => rules.some((r) => names.includes(r.name));
  const sign = rules.find((r) => r.name === 'sign')?.args?.sign;
  const added = [
    ...(has('min', 'greater') || sign === 'positive'
      ? []
      : [{ name: 'min', args: { limit: Number.MIN_SAFE_INTEGER } }]),
    ...(has('max', 'less') || sign === 'negative'
      ? []
      : [{ name: 'max', args: { limit: Number.MAX_SAFE_INTEGER } }]),
  ];
  desc.rules = [...rules, ...added];
}

const presenceOf = (branch: Description | undefined) =>
  branch ? ((branch.flags?.presence as string | undefined) ?? 'optional') : undefined;

// `error` is what custom messages set (libs/joi); they do not change what is accepted.
const isPresenceOnly = (branch: Description | undefined) =>
  branch === undefined ||
  (branch.type === 'any' &&
    !branch.rules?.length &&
    Object.keys(branch.flags ?? {}).every((f) => f === 'presence' || f === 'error'));

function presenceKeywords(key: string, presence: string | undefined): JsonSchema | undefined {
  if (presence === 'required') return { required: [key] };
  if (presence === 'forbidden') return { not: { required: [key] } };
  return undefined;
}

/** `key: X.when('sibling', {is, then, otherwise})` as the object's `if`/`then`/`else`. */
function liftSiblingConditions(desc: Description): void {
  const lifted: JsonSchema[] = [];
  for (const [key, child] of Object.entries(desc.keys ?? {})) {
    if (!child.whens) continue;
    for (const when of child.whens) {
      const path = when.ref?.path ?? [];
      const sibling = desc.keys?.[path[0]];
      const supported =
        when.ref &&
        !when.switch &&
        (when.ref.ancestor ?? 1) === 1 &&
        path.length === 1 &&
        sibling &&
        when.is &&
        isPresenceOnly(when.then) &&
        isPresenceOnly(when.otherwise);
      if (!supported) {
        throw new Error(
          `"${key}": only .when('<sibling>', {is, then, otherwise}) with Joi.required(), Joi.forbidden() or Joi.optional() branches can be documented`,
        );
      }
      const is = Joi.build(when.is as object);
      const siblingDefault = sibling.flags?.default;
      const absentMatches = is.validate(siblingDefault).error === undefined;
      const condition: JsonSchema = {
        properties: { [path[0]]: convertDescription(when.is as Description, refuseNames) },
      };
      if (!absentMatches) condition.required = [path[0]];
      const then = presenceKeywords(key, presenceOf(when.then));
      const otherwise = presenceKeywords(key, presenceOf(when.otherwise));
      if (!then && !otherwise) continue;
      lifted.push({
        if: condition,
        ...(then ? { then } : {}),
        ...(otherwise ? { else: otherwise } : {}),
      });
    }
    delete child.whens;
  }
  if (lifted.length > 0) addKeywords(desc, { allOf: lifted });
}

/**
 * A schema's own preferences (its custom messages, say) hide its parent's `presence` from
 * joi-to-json; joi merges them, so the presence is copied in.
 */
function inheritPresence(desc: Description, inherited: unknown): unknown {
  const own = desc.preferences as Record<string, unknown> | undefined;
  if (own && own.presence === undefined && inherited !== undefined) own.presence = inherited;
  return own?.presence ?? inherited;
}

const refuseNames = (name: string) => {
  throw new Error(`${name}: a condition cannot be named`);
};

/** Makes explicit, in place and bottom-up, what joi-to-json would miss or get wrong. */
function prepare(desc: Description, inherited?: unknown): Description {
  const presence = inheritPresence(desc, inherited);
  for (const child of children(desc)) prepare(child, presence);
  foldDocumentKeywords(desc);
  if (desc.type === 'string') explicitStringRules(desc);
  if (desc.type === 'number') {
    integerFirst(desc);
    safeBounds(desc);
  }
  if (desc.type === 'object') {
    // Joi.object() without keys takes any keys (Joi.object({}) takes none).
    if (!desc.keys && desc.flags?.unknown === undefined)
      desc.flags = { ...desc.flags, unknown: true };
    liftSiblingConditions(desc);
  }
  return desc;
}

const componentRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** Where `finish` hands named schemas, and how it converts joi schemas found in keywords. */
interface Finishing {
  name(name: string, schema: JsonSchema): void;
  convert(desc: Description): JsonSchema;
}

/**
 * Merges the keywords a schema carries for the document, everywhere in `json`, and hands
 * each named schema to `name`, leaving a reference in its place.
 */
function finish(json: unknown, finishing: Finishing): unknown {
  if (Array.isArray(json)) return json.map((item) => finish(item, finishing));
  if (typeof json !== 'object' || json === null) return json;
  const embedded = (json as JsonSchema)[EMBEDDED_SCHEMA];
  if (isDescription(embedded)) return finishing.convert(embedded);
  let node: JsonSchema = {};
  for (const [key, value] of Object.entries(json)) {
    if (key !== DOCUMENT_KEYWORDS && key !== COMPONENT_NAME) node[key] = finish(value, finishing);
  }
  // A forbidden key of a closed object is no key at all; listing it as `not: {}` only
  // confuses generators.
  if (node.additionalProperties === false && node.properties) {
    node.properties = Object.fromEntries(
      Object.entries(node.properties as JsonSchema).filter(
        ([, value]) => JSON.stringify(value) !== '{"not":{}}',
      ),
    );
  }
  // joi's any() comes out as a list of every type: no constraint, said simply.
  if (Array.isArray(node.type) && ANY_TYPE.every((t) => (node.type as string[]).includes(t))) {
    delete node.type;
  }
  const keywords = (json as JsonSchema)[DOCUMENT_KEYWORDS] as JsonSchema | undefined;
  if (keywords) node = mergeKeywords(node, finish(keywords, finishing) as JsonSchema);
  const component = (json as JsonSchema)[COMPONENT_NAME] as string | undefined;
  if (!component) return node;
  const types = Array.isArray(node.type) ? (node.type as string[]) : undefined;
  if (!types?.includes('null')) {
    finishing.name(component, node);
    return componentRef(component);
  }
  const others = types.filter((t) => t !== 'null');
  finishing.name(component, { ...node, type: others.length === 1 ? others[0] : others });
  return { anyOf: [componentRef(component), { type: 'null' }] };
}

function convertDescription(desc: Description, name: Finishing['name']): JsonSchema {
  const json = joiToJson(
    { describe: () => desc } as unknown as Joi.Schema,
    'open-api-3.1',
  ) as JsonSchema;
  const finishing: Finishing = {
    name,
    convert: (embedded) => convertDescription(prepare(embedded), name),
  };
  return finish(json, finishing) as JsonSchema;
}

/** The component schemas named in joi schemas, each kept once; a name means one schema. */
export class ComponentSchemas {
  readonly schemas: Record<string, JsonSchema> = {};

  add(name: string, schema: JsonSchema): void {
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`Two different schemas are named ${name}; name one of them otherwise`);
    }
    this.schemas[name] = schema;
  }

  /** The JSON Schema of a joi schema, its named parts as `$ref`s to `schemas`. */
  convert(schema: Joi.Schema): JsonSchema {
    return convertDescription(prepare(schema.describe() as Description), (n, s) => this.add(n, s));
  }
}

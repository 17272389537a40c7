import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import type { CommandWrap } from '../support/stack';

/** Runs `fn` and returns what it threw; fails the test when it returns normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the function to throw, but it returned');
}

/**
 * Calls `fn` and returns why it failed, whether it threw or returned a rejected promise;
 * fails the test when it succeeds.
 */
export async function rejectionOf(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

type Schema = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const TYPES: Record<string, (value: unknown) => boolean> = {
  object: isObject,
  array: Array.isArray,
  string: (value) => typeof value === 'string',
  boolean: (value) => typeof value === 'boolean',
  number: (value) => typeof value === 'number',
  integer: (value) => Number.isInteger(value),
  null: (value) => value === null,
};

/**
 * Whether `value` meets `schema` by the JSON Schema keywords that state rules across fields
 * (`required`, `const`, `enum`, `type`, `properties`, `not`, `allOf`, `anyOf`, `oneOf`,
 * `if`/`then`/`else`); a field's own form (patterns, lengths, formats) is joi's to compare
 * with the document elsewhere. The documented rules of a body are checked against the
 * handler's by bodies of well-formed fields.
 */
export function meetsRules(schema: Schema, value: unknown): boolean {
  const types = schema.type === undefined ? [] : [schema.type].flat();
  if (types.length > 0 && !types.some((t) => TYPES[t as string]?.(value))) return false;
  if ('const' in schema && value !== schema.const) return false;
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return false;
  if (isObject(value)) {
    const required = (schema.required ?? []) as string[];
    if (!required.every((key) => key in value)) return false;
    for (const [key, property] of Object.entries((schema.properties ?? {}) as Schema)) {
      if (key in value && !meetsRules(property as Schema, value[key])) return false;
    }
  }
  if (schema.not && meetsRules(schema.not as Schema, value)) return false;
  const all = (schema.allOf ?? []) as Schema[];
  const any = schema.anyOf as Schema[] | undefined;
  const one = schema.oneOf as Schema[] | undefined;
  if (!all.every((s) => meetsRules(s, value))) return false;
  if (any && !any.some((s) => meetsRules(s, value))) return false;
  if (one && one.filter((s) => meetsRules(s, value)).length !== 1) return false;
  if (schema.if) {
    const branch = meetsRules(schema.if as Schema, value) ? schema.then : schema.else;
    if (branch && !meetsRules(branch as Schema, value)) return false;
  }
  return true;
}

/**
 * Texts of about the form a pattern (a regular expression's source) describes, to compare a
 * document's pattern with a validator: fast-check writes no lookahead, so they are left out, and
 * the texts that break one are compared like any other.
 */
export function textsAboutMatching(pattern: string): fc.Arbitrary<string> {
  let source = pattern;
  for (let start = source.indexOf('(?!'); start >= 0; start = source.indexOf('(?!')) {
    let depth = 0;
    let end = start;
    for (; end < source.length; end++) {
      if (source[end] === '\\') end++;
      else if (source[end] === '(') depth++;
      else if (source[end] === ')' && --depth === 0) break;
    }
    source = source.slice(0, start) + source.slice(end + 1);
  }
  return fc.stringMatching(new RegExp(source));
}

/** A Node program that prints V8's heap limit in MB: old space and young generation. */
export const PRINT_HEAP_LIMIT_MB =
  "console.log(require('v8').getHeapStatistics().heap_size_limit / 2 ** 20)";

/**
 * The number a Node program prints, run with only `nodeOptions` for NODE_OPTIONS, through
 * `wrap` when given (a memory cgroup); fails the test if Node writes to stderr.
 */
export function numberPrintedByNode(
  program: string,
  nodeOptions = '',
  wrap: CommandWrap = (command, args) => [command, args],
): number {
  const [command, args] = wrap(process.execPath, ['-e', program]);
  const run = spawnSync(command, args, {
    env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions },
    encoding: 'utf8',
  });
  expect(run.stderr).toBe('');
  return Number(run.stdout);
}

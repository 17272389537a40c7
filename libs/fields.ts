/**
 * Whether `value` is an object of named fields, as a parsed JSON object is: not null, not an
 * array. Request bodies, third parties' answers, tariff overlays and log arguments are told
 * apart from other values by it.
 */
export const isFields = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

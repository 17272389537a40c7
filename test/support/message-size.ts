import type Joi from '../../libs/joi';

export {
  NATS_MESSAGE_BYTES as NATS_MAX_PAYLOAD,
  REPLY_OVERHEAD_BYTES as PACKET_ALLOWANCE,
} from '../../libs/reply-size';

/**
 * Text as long in JSON as `length` characters of plain text can be: four bytes each in UTF-8
 * and in JSON (limits count code points), the most plain text can take, as it refuses control
 * characters and lone surrogates (six bytes each as `\uXXXX`).
 */
export const widest = (length: number) => '😀'.repeat(length);

/** The `max` of a number schema: the largest page a `limit` takes. */
export function largestAllowed(schema: Joi.Schema): number {
  const { rules } = schema.describe() as { rules?: { name: string; args: { limit: number } }[] };
  const max = rules?.find((r) => r.name === 'max')?.args.limit;
  if (max === undefined) throw new Error('the schema has no max');
  return max;
}

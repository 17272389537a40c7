import { createHash, randomBytes } from 'node:crypto';
import type { AppEnvironment } from '../../libs/config';

/** API keys read `<prefix>_<live|staging>_<64 hex>`; only their SHA-256 is ever stored. */
const KEY_PATTERN = /^([a-z][a-z0-9]{0,15})_(live|staging)_([0-9a-fA-F]{64})$/;

export interface GeneratedApiKey {
  plaintext: string;
  hash: string;
}

export type ParsedApiKey =
  { valid: true; environment: AppEnvironment; hash: string } | { valid: false };

export function hashApiKey(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

export function generateApiKey(prefix: string, environment: AppEnvironment): GeneratedApiKey {
  const plaintext = `${prefix}_${environment}_${randomBytes(32).toString('hex')}`;
  return { plaintext, hash: hashApiKey(plaintext) };
}

/**
 * Checks the shape of a presented key and returns the hash to look it up by. Hex digits
 * are case-insensitive, so the hash is taken of the canonical lower-case form.
 */
export function parseApiKey(raw: string, prefix: string): ParsedApiKey {
  const match = KEY_PATTERN.exec(raw.trim());
  if (!match || match[1] !== prefix) return { valid: false };
  const environment = match[2] as AppEnvironment;
  const canonical = `${prefix}_${environment}_${match[3].toLowerCase()}`;
  return { valid: true, environment, hash: hashApiKey(canonical) };
}

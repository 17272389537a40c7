import { randomBytes } from 'node:crypto';
import type { AppEnvironment } from '../../libs/config';
import { formatApiKey } from '../../libs/contracts/account';
import { credentialHash } from '../../libs/issued-tokens';

export interface GeneratedApiKey {
  plaintext: string;
  hash: string;
}

/** A new key `<prefix>_<environment>_<64 hex>` and the hash it is stored and found by. */
export function generateApiKey(prefix: string, environment: AppEnvironment): GeneratedApiKey {
  const plaintext = formatApiKey(prefix, environment, randomBytes(32).toString('hex'));
  return { plaintext, hash: credentialHash(plaintext) };
}

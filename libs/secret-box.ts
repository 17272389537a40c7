import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** GCM's full tag, as `seal` writes it. */
const TAG_BYTES = 16;

/**
 * What must be kept at rest but read back, so cannot be hashed, sealed with AES-256-GCM under
 * the SHA-256 of a key kept elsewhere: webhook signing secrets (every message is signed with
 * them) under `WEBHOOK_SECRET_KEY` from the configuration, so that a copy of the database alone
 * reveals none; answers kept for `Idempotency-Key` replays under the key the client sends
 * (gateway/idempotency), so that a copy of Redis alone reveals none.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(keyMaterial: string) {
    this.key = createHash('sha256').update(keyMaterial, 'utf8').digest();
  }

  /** `v1.<iv>.<tag>.<ciphertext>`, base64url parts. */
  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), sealed].map(encode).join('.');
  }

  /** Throws when the value was sealed under another key or altered. */
  open(sealed: string): string {
    const [version, iv, tag, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ciphertext === undefined) {
      throw new Error('sealed value: unknown format');
    }
    // The whole 16-byte tag: GCM would check a truncated one, down to 4 bytes, and forging
    // a tag that short takes some four billion tries, not 2^128.
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([
      decipher.update(Buffer.from(ciphertext, 'base64url')),
      decipher.final(),
    ]).toString('utf8');
  }
}

function encode(part: string | Buffer): string {
  return typeof part === 'string' ? part : part.toString('base64url');
}

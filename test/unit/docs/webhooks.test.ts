import fc from 'fast-check';
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { signatureHeader, verifySignature } from '../../../libs/webhook-signature';

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'webhooks.md'), 'utf8');

/** The first `js` block of the section headed `heading`: what integrators paste. */
function snippet(heading: string): string {
  const section = doc.split(/^## /m).find((s) => s.startsWith(`${heading}\n`));
  const code = section && /^```js\n([\s\S]*?)^```$/m.exec(section)?.[1];
  if (!code) throw new Error(`docs/webhooks.md has no js block under "## ${heading}"`);
  return code;
}

type Verify = (
  header: string,
  secret: string,
  rawBody: Buffer,
  toleranceSeconds?: number,
) => boolean;

/** The snippet, run on its own with nothing but `node:crypto` to require. */
const verifyAsDocumented = runInNewContext(
  `${snippet('Verifying signatures')}\nverifyWaybillSignature;`,
  {
    Buffer,
    require: (id: string) => {
      if (id !== 'node:crypto')
        throw new Error(`the snippet may require only node:crypto, not ${id}`);
      return crypto;
    },
  },
) as Verify;

const secretArb = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map((bytes) => `whsec_${Buffer.from(bytes).toString('base64url')}`);
const bodyArb = fc.uint8Array({ maxLength: 256 }).map((bytes) => Buffer.from(bytes));
const nowSeconds = () => Math.floor(Date.now() / 1000);

describe('docs/webhooks.md: the verification snippet', () => {
  it('accepts what signatureHeader signs, with either secret during a rotation', () => {
    fc.assert(
      fc.property(secretArb, secretArb, bodyArb, (older, newer, body) => {
        const header = signatureHeader([older, newer], body, nowSeconds());
        expect(verifyAsDocumented(header, older, body)).toBe(true);
        expect(verifyAsDocumented(header, newer, body)).toBe(true);
      }),
    );
  });

  it('refuses a changed body, another secret and a stale timestamp', () => {
    fc.assert(
      fc.property(secretArb, secretArb, bodyArb, (secret, other, body) => {
        fc.pre(secret !== other);
        const header = signatureHeader([secret], body, nowSeconds());
        expect(verifyAsDocumented(header, secret, Buffer.concat([body, Buffer.from(' ')]))).toBe(
          false,
        );
        expect(verifyAsDocumented(header, other, body)).toBe(false);
        const stale = signatureHeader([secret], body, nowSeconds() - 301);
        expect(verifyAsDocumented(stale, secret, body)).toBe(false);
        expect(verifyAsDocumented(stale, secret, body, 600)).toBe(true);
      }),
    );
  });

  it('agrees with verifySignature on a signed header with any one character changed', () => {
    fc.assert(
      fc.property(
        secretArb,
        bodyArb,
        fc.nat(),
        fc.constantFrom(...'0123456789abcdefABt=v, '),
        (secret, body, at, char) => {
          const now = nowSeconds();
          const header = signatureHeader([secret], body, now);
          const i = at % header.length;
          const changed = header.slice(0, i) + char + header.slice(i + 1);
          const lib = verifySignature(changed, secret, body, { now }).ok;
          expect([changed, verifyAsDocumented(changed, secret, body)]).toEqual([changed, lib]);
        },
      ),
    );
  });
});

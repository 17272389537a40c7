import { SecretBox } from '../../../libs/secret-box';

describe('SecretBox', () => {
  it('opens what it sealed, and nothing sealed under another key or altered', () => {
    const box = new SecretBox('a-key-of-at-least-thirty-two-characters');
    const sealed = box.seal('whsec_secret');
    expect(sealed).not.toContain('whsec_secret');
    expect(box.open(sealed)).toBe('whsec_secret');
    expect(box.seal('whsec_secret')).not.toBe(sealed);
    expect(() => new SecretBox('another-key-of-at-least-thirty-two-chars').open(sealed)).toThrow();
    const [v, iv, tag, body] = sealed.split('.');
    const flipped = `${body[0] === 'A' ? 'B' : 'A'}${body.slice(1)}`;
    expect(() => box.open([v, iv, tag, flipped].join('.'))).toThrow();
  });

  it('refuses a truncated tag, which GCM alone would check on its few bytes', () => {
    const box = new SecretBox('a-key-of-at-least-thirty-two-characters');
    const [v, iv, tag, body] = box.seal('whsec_secret').split('.');
    const short = Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url');
    expect(() => box.open([v, iv, short, body].join('.'))).toThrow();
  });
});

import fc from 'fast-check';
import { WaybillError } from '../../../libs/errors';
import { checkAdminToken } from '../../../services/gateway/admin-auth';
import { thrownBy } from '../helpers';

const TOKEN = 'admin-token-0123456789abcdef';
const REQUIRED = 'Admin token is required: send Authorization: Bearer <ADMIN_TOKEN>';

function errorOf(header: string | undefined, token: string | undefined): WaybillError {
  const err = thrownBy(() => checkAdminToken(header, token));
  expect(err).toBeInstanceOf(WaybillError);
  return err as WaybillError;
}

describe('checkAdminToken', () => {
  it.each([undefined, ''])('answers 403 when no admin token is configured (%p)', (configured) => {
    const err = errorOf(`Bearer ${TOKEN}`, configured);
    expect(err.code).toBe(403);
    expect(err.type).toBe('FORBIDDEN');
    expect(err.message).toMatch(/ADMIN_TOKEN/);
  });

  it('answers 403 without a configured token even when no header is sent', () => {
    expect(errorOf(undefined, undefined).code).toBe(403);
  });

  it.each([
    ['a missing header', undefined],
    ['an empty header', ''],
    ['Bearer without a token', 'Bearer'],
    ['Bearer and spaces', 'Bearer    '],
    ['another scheme', `Basic ${TOKEN}`],
    ['no scheme', TOKEN],
    ['two tokens', `Bearer ${TOKEN} ${TOKEN}`],
    ['a leading space', ` Bearer ${TOKEN}`],
    ['Bearer glued to the token', `Bearer${TOKEN}`],
  ])('answers 401 asking for the token with %s', (_what, header) => {
    const err = errorOf(header, TOKEN);
    expect(err.code).toBe(401);
    expect(err.type).toBe('UNAUTHORIZED');
    expect(err.message).toBe(REQUIRED);
  });

  it.each([
    ['another token', 'Bearer not-the-admin-token-at-all'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the token plus a character', `Bearer ${TOKEN}x`],
    ['the token in another case', `Bearer ${TOKEN.toUpperCase()}`],
  ])('answers 401 Invalid admin token for %s', (_what, header) => {
    const err = errorOf(header, TOKEN);
    expect(err.code).toBe(401);
    expect(err.message).toBe('Invalid admin token');
  });

  it.each([
    `Bearer ${TOKEN}`,
    `bearer ${TOKEN}`,
    `BEARER ${TOKEN}`,
    `Bearer   ${TOKEN}`,
    `Bearer\t${TOKEN}`,
    `Bearer ${TOKEN}  `,
  ])('accepts %p', (header) => {
    expect(checkAdminToken(header, TOKEN)).toBeUndefined();
  });

  it('accepts only the configured token (property)', () => {
    const token = fc.stringMatching(/^[A-Za-z0-9._~+/=-]{16,64}$/);
    fc.assert(
      fc.property(token, token, (configured, presented) => {
        const check = () => checkAdminToken(`Bearer ${presented}`, configured);
        if (presented === configured) expect(check).not.toThrow();
        else expect(check).toThrow('Invalid admin token');
      }),
    );
  });
});

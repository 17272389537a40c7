import fc from 'fast-check';
import { WaybillError } from '../../../libs/errors';
import { isRepeatedRefusal } from '../../../libs/lookup-cache';
import { OPERATOR_TOKENS, type OperatorAuth } from '../../../libs/contracts/account';
import { ADMIN_AUTH_MESSAGES, AdminAuthenticator } from '../../../services/gateway/admin-auth';
import { rejectionOf } from '../helpers';

const TOKEN = 'admin-token-0123456789abcdef';
const NOW = 1_700_000_000_000;

/** An operator token of the right shape, the n-th. */
const operatorToken = (n: number) => `wbo_${n.toString(36).padStart(43, 'A')}`;

function setup(
  options: { adminToken?: string; operators?: Record<number, Partial<OperatorAuth>> } = {},
) {
  const table = new Map<string, OperatorAuth>(
    Object.entries(options.operators ?? { 1: {} }).map(([n, auth]) => [
      OPERATOR_TOKENS.hash(operatorToken(Number(n))),
      { tokenId: `token-${n}`, name: `operator ${n}`, expiresAt: null, ...auth },
    ]),
  );
  const lookup = jest.fn(async (hash: string) => table.get(hash) ?? null);
  const clock = { now: NOW };
  const authenticator = new AdminAuthenticator({
    adminToken: 'adminToken' in options ? options.adminToken : TOKEN,
    cacheMs: 60_000,
    lookup,
    now: () => clock.now,
  });
  return { authenticator, lookup, clock, table };
}

async function errorOf(authenticator: AdminAuthenticator, header: string | undefined) {
  const err = await rejectionOf(() => authenticator.authenticate(header));
  expect(err).toBeInstanceOf(WaybillError);
  return err as WaybillError;
}

describe('AdminAuthenticator', () => {
  it.each([undefined, ''])(
    'answers 403 when no admin token is configured (%p), operator tokens too',
    async (configured) => {
      const { authenticator, lookup } = setup({ adminToken: configured });
      for (const header of [`Bearer ${TOKEN}`, `Bearer ${operatorToken(1)}`, undefined]) {
        const err = await errorOf(authenticator, header);
        expect(err).toMatchObject({ code: 403, type: 'FORBIDDEN' });
        expect(err.message).toMatch(/ADMIN_TOKEN/);
      }
      expect(lookup).not.toHaveBeenCalled();
    },
  );

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
  ])('answers 401 asking for a token with %s', async (_what, header) => {
    const err = await errorOf(setup().authenticator, header);
    expect(err).toMatchObject({ code: 401, type: 'UNAUTHORIZED' });
    expect(err.message).toBe(ADMIN_AUTH_MESSAGES.required);
  });

  it.each([
    ['another token', 'Bearer not-the-admin-token-at-all'],
    ['a prefix of the token', `Bearer ${TOKEN.slice(0, -1)}`],
    ['the token plus a character', `Bearer ${TOKEN}x`],
    ['the token in another case', `Bearer ${TOKEN.toUpperCase()}`],
    ['an operator token one character short', `Bearer ${operatorToken(1).slice(0, -1)}`],
    ['a courier token', `Bearer wbc_${'A'.repeat(43)}`],
  ])('answers 401 Invalid admin token for %s, looking nothing up', async (_what, header) => {
    const { authenticator, lookup } = setup();
    const err = await errorOf(authenticator, header);
    expect(err).toMatchObject({ code: 401, message: ADMIN_AUTH_MESSAGES.invalid });
    expect(lookup).not.toHaveBeenCalled();
  });

  it.each([
    `Bearer ${TOKEN}`,
    `bearer ${TOKEN}`,
    `BEARER ${TOKEN}`,
    `Bearer   ${TOKEN}`,
    `Bearer\t${TOKEN}`,
    `Bearer ${TOKEN}  `,
  ])('accepts ADMIN_TOKEN as %p, as admin-token, without a lookup', async (header) => {
    const { authenticator, lookup } = setup();
    await expect(authenticator.authenticate(header)).resolves.toEqual({
      name: 'admin-token',
      tokenId: null,
    });
    expect(lookup).not.toHaveBeenCalled();
  });

  it('accepts only the configured token as ADMIN_TOKEN (property)', async () => {
    const token = fc.stringMatching(/^[A-Za-z0-9._~+/=-]{16,64}$/);
    await fc.assert(
      fc.asyncProperty(token, token, async (configured, presented) => {
        const { authenticator } = setup({ adminToken: configured });
        const outcome = authenticator.authenticate(`Bearer ${presented}`);
        if (presented === configured) await expect(outcome).resolves.toMatchObject({});
        else await expect(outcome).rejects.toMatchObject({ code: 401 });
      }),
    );
  });

  it("acts as an operator token's holder, looked up by its SHA-256 once per cache period", async () => {
    const { authenticator, lookup, clock } = setup();
    const header = `Bearer ${operatorToken(1)}`;
    const operator = { name: 'operator 1', tokenId: 'token-1' };
    await expect(authenticator.authenticate(header)).resolves.toEqual(operator);
    await expect(authenticator.authenticate(header)).resolves.toEqual(operator);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith(OPERATOR_TOKENS.hash(operatorToken(1)));
    clock.now += 60_001;
    await authenticator.authenticate(header);
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('refuses an unknown or revoked operator token, and a forgotten one at once', async () => {
    const { authenticator, table } = setup();
    const unknown = await errorOf(authenticator, `Bearer ${operatorToken(2)}`);
    expect(unknown).toMatchObject({ code: 401, message: ADMIN_AUTH_MESSAGES.refused });

    const header = `Bearer ${operatorToken(1)}`;
    await authenticator.authenticate(header);
    const hash = OPERATOR_TOKENS.hash(operatorToken(1));
    table.delete(hash);
    // Cached: a revocation reaches this gateway by its event.
    await expect(authenticator.authenticate(header)).resolves.toMatchObject({});
    authenticator.forget(hash);
    expect(await errorOf(authenticator, header)).toMatchObject({
      code: 401,
      message: ADMIN_AUTH_MESSAGES.refused,
    });
  });

  it('refuses an operator token past its expiry, though its answer is cached', async () => {
    const expiresAt = new Date(NOW + 1_000).toISOString();
    const { authenticator, clock } = setup({ operators: { 1: { expiresAt } } });
    const header = `Bearer ${operatorToken(1)}`;
    await expect(authenticator.authenticate(header)).resolves.toMatchObject({
      name: 'operator 1',
    });
    clock.now += 1_000;
    const err = await errorOf(authenticator, header);
    expect(err).toMatchObject({ code: 401 });
    expect(err.message).toBe(
      `This operator token expired at ${expiresAt}; ask an operator with ADMIN_TOKEN for a new one`,
    );
    // A token we issued, no guess: the failed-authentication count passes over it, however
    // often an operator's script sends it.
    expect(isRepeatedRefusal(err)).toBe(true);
    expect(isRepeatedRefusal(await errorOf(authenticator, `Bearer ${operatorToken(9)}`))).toBe(
      false,
    );
  });

  it('calls beforeLookup before looking an operator token up, and not for ADMIN_TOKEN', async () => {
    const { authenticator } = setup();
    const beforeLookup = jest.fn(async () => undefined);
    await authenticator.authenticate(`Bearer ${TOKEN}`, beforeLookup);
    expect(beforeLookup).not.toHaveBeenCalled();
    await authenticator.authenticate(`Bearer ${operatorToken(1)}`, beforeLookup);
    expect(beforeLookup).toHaveBeenCalledTimes(1);
  });
});

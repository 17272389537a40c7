import crypto from 'node:crypto';
import fc from 'fast-check';
import { WaybillError } from '../../../libs/errors';
import {
  hashCourierToken,
  parseCourierToken,
  type CourierAuth,
} from '../../../libs/contracts/matching';
import { generateCourierToken } from '../../../services/courier-matching/courier-tokens';
import {
  COURIER_TOKEN_MESSAGES,
  CourierTokenAuthenticator,
} from '../../../services/gateway/courier-auth';
import { rejectionOf } from '../helpers';

const token = (n: number) => `wbc_${n.toString(36).padStart(43, 'A')}`;
const auth = (n: number): CourierAuth => ({ courierId: `courier-${n}`, tokenId: `token-${n}` });

function setup(known: number[] = [1]) {
  const table = new Map(known.map((n) => [hashCourierToken(token(n)), auth(n)]));
  const lookup = jest.fn(async (hash: string) => table.get(hash) ?? null);
  const clock = { now: 1_700_000_000_000 };
  const authenticator = new CourierTokenAuthenticator({
    cacheMs: 60_000,
    lookup,
    now: () => clock.now,
  });
  return { authenticator, lookup, clock, table };
}

async function refusedWith(promise: () => Promise<unknown>, message: string) {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(WaybillError);
  expect(err).toMatchObject({ type: 'UNAUTHORIZED', code: 401, message });
}

describe('courier tokens', () => {
  it('are wbc_ and 43 base64url characters, random, found by their SHA-256', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const { token: t, hash } = generateCourierToken();
      expect(t).toMatch(/^wbc_[A-Za-z0-9_-]{43}$/);
      expect(hash).toBe(hashCourierToken(t));
      expect(parseCourierToken(` ${t} `)).toBe(hash);
      seen.add(t);
    }
    expect(seen.size).toBe(50);
  });

  it('parse to null when not shaped like one (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (text) => {
        fc.pre(!/^\s*wbc_[A-Za-z0-9_-]{43}\s*$/.test(text));
        expect(parseCourierToken(text)).toBeNull();
      }),
    );
    for (const text of ['wbc_short', `wb_${'A'.repeat(43)}`, `wbc_${'A'.repeat(44)}`]) {
      expect(parseCourierToken(text)).toBeNull();
    }
  });
});

describe('CourierTokenAuthenticator', () => {
  it.each([undefined, '', '  ', [] as string[]])(
    'asks for a token when there is none (%p), saying what to send',
    async (header) => {
      const { authenticator, lookup } = setup();
      await refusedWith(() => authenticator.authenticate(header), COURIER_TOKEN_MESSAGES.required);
      expect(COURIER_TOKEN_MESSAGES.required).toMatch(
        /^Courier token is required: send Authorization: Bearer <courier token>/,
      );
      expect(lookup).not.toHaveBeenCalled();
    },
  );

  it.each([token(1), `Basic ${token(1)}`, 'Bearer wbc_short', `Bearer ${token(1)} extra`])(
    'refuses %p as malformed without a lookup',
    async (header) => {
      const { authenticator, lookup } = setup();
      await refusedWith(() => authenticator.authenticate(header), COURIER_TOKEN_MESSAGES.format);
      expect(lookup).not.toHaveBeenCalled();
    },
  );

  it('answers the courier of a known token, in any case of "Bearer"', async () => {
    const { authenticator, lookup } = setup();
    await expect(authenticator.authenticate(`Bearer ${token(1)}`)).resolves.toEqual(auth(1));
    await expect(authenticator.authenticate(`bearer  ${token(1)} `)).resolves.toEqual(auth(1));
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith(hashCourierToken(token(1)));
  });

  it('refuses an unknown, revoked or retired one (the lookup answers null)', async () => {
    const { authenticator } = setup();
    await refusedWith(
      () => authenticator.authenticate(`Bearer ${token(2)}`),
      COURIER_TOKEN_MESSAGES.refused,
    );
  });

  it('keeps answers for its cache time, and forgets a token at once when told', async () => {
    const { authenticator, lookup, clock, table } = setup();
    await authenticator.authenticate(`Bearer ${token(1)}`);
    table.clear();
    clock.now += 59_999;
    await expect(authenticator.authenticate(`Bearer ${token(1)}`)).resolves.toEqual(auth(1));
    authenticator.forget(hashCourierToken(token(1)));
    await refusedWith(
      () => authenticator.authenticate(`Bearer ${token(1)}`),
      COURIER_TOKEN_MESSAGES.refused,
    );
    expect(lookup).toHaveBeenCalledTimes(2);
  });

  it('asks beforeLookup (the throttle) only about tokens it has not accepted', async () => {
    const { authenticator } = setup();
    const throttle = jest.fn(async () => undefined);
    await authenticator.authenticate(`Bearer ${token(1)}`, throttle);
    expect(throttle).toHaveBeenCalledTimes(1);
    const refuse = jest.fn(async () => Promise.reject(new Error('throttled')));
    await expect(authenticator.authenticate(`Bearer ${token(1)}`, refuse)).resolves.toEqual(
      auth(1),
    );
    await expect(authenticator.authenticate(`Bearer ${token(3)}`, refuse)).rejects.toThrow(
      'throttled',
    );
  });

  it('hashes a token accepted lately once for the cache lifetime, not on every report', async () => {
    const { authenticator, clock } = setup();
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      await authenticator.authenticate(`Bearer ${token(1)}`);
      clock.now += 59_999;
      await authenticator.authenticate(`Bearer ${token(1)}`);
      await authenticator.authenticate([`Bearer ${token(1)}`]);
      expect(sha).toHaveBeenCalledTimes(1);
      clock.now += 1;
      await authenticator.authenticate(`Bearer ${token(1)}`);
      expect(sha).toHaveBeenCalledTimes(2);
    } finally {
      sha.mockRestore();
    }
  });

  it('remembers a token by its exact header only: padded ones are accepted and hashed each time', async () => {
    const { authenticator, lookup } = setup();
    const padded = [
      `Bearer  ${token(1)}`,
      `Bearer ${token(1)}  `,
      `Bearer\u00a0${token(1)}`,
      `Bearer ${'\u00a0'.repeat(3)}${token(1)}`,
    ];
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      for (const header of [...padded, ...padded]) {
        expect(await authenticator.authenticate(header)).toEqual(auth(1));
      }
      expect(sha).toHaveBeenCalledTimes(2 * padded.length);
      await authenticator.authenticate(`Bearer ${token(1)}`);
      await authenticator.authenticate(`Bearer ${token(1)}`);
      expect(sha).toHaveBeenCalledTimes(2 * padded.length + 1);
    } finally {
      sha.mockRestore();
    }
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('keeps hashing refused tokens, and a forgotten token is looked up again', async () => {
    const { authenticator, lookup, table } = setup();
    const sha = jest.spyOn(crypto, 'createHash');
    try {
      for (let i = 0; i < 2; i++) {
        await refusedWith(
          () => authenticator.authenticate(`Bearer ${token(2)}`),
          COURIER_TOKEN_MESSAGES.refused,
        );
      }
      expect(sha).toHaveBeenCalledTimes(2);
    } finally {
      sha.mockRestore();
    }
    await authenticator.authenticate(`Bearer ${token(1)}`);
    table.clear();
    authenticator.forget(hashCourierToken(token(1)));
    await refusedWith(
      () => authenticator.authenticate(`Bearer ${token(1)}`),
      COURIER_TOKEN_MESSAGES.refused,
    );
    expect(lookup).toHaveBeenLastCalledWith(hashCourierToken(token(1)));
  });
});

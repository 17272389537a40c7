import Joi from '../../../libs/joi';
import {
  CONTRACT_RETRY,
  SAFE_RETRIES,
  broadcast,
  call,
  type Caller,
} from '../../../libs/contracts';
import { resolveApiKeyParams } from '../../../libs/contracts/account';
import { implement, toServiceSchema } from '../../../libs/service';

/** A caller that records what it was asked and answers `answer`. */
function recordingCaller(answer: unknown) {
  const calls: unknown[][] = [];
  const caller: Caller = {
    call: async (...args: unknown[]) => {
      calls.push(args);
      return answer;
    },
  };
  return { caller, calls };
}

describe('call()', () => {
  it('calls the named action with the params and options, and answers its answer', async () => {
    const area = { countryCode: 'NG', country: 'Nigeria', state: 'Lagos' };
    const { caller, calls } = recordingCaller(area);
    const found = await call(
      caller,
      'geo.findArea',
      { countryCode: 'NG', state: 'Lagos' },
      { timeout: 5 },
    );
    expect(found.state).toBe('Lagos');
    expect(calls).toEqual([
      [
        'geo.findArea',
        { countryCode: 'NG', state: 'Lagos' },
        { retries: SAFE_RETRIES, timeout: 5 },
      ],
    ]);
  });

  it("lets moleculer repeat a lost call only as the contract's retry kind allows", async () => {
    const { caller, calls } = recordingCaller(null);
    const params = { name: 'A', email: 'a@example.com', phone: '+2348012345678' };
    await call(caller, 'account.createUser', params);
    await call({ ...caller, meta: { idempotencyToken: 't' } }, 'package.assign', {
      userId: 'u',
      deliveryId: 'd',
      packageIds: ['p'],
    });
    expect(calls.map((c) => c[2])).toEqual([{ retries: 0 }, { retries: SAFE_RETRIES }]);
  });

  it('records the contract an implementation answers for, and its retry kind', () => {
    const action = implement('account.resolveApiKey', {
      params: resolveApiKeyParams,
      handler: () => null,
    });
    expect(action.contract).toBe('account.resolveApiKey');
    expect(action.retry).toBe(CONTRACT_RETRY['account.resolveApiKey']);
  });
});

/**
 * Never run: `npm run typecheck` (tsc over the tests) fails when one of these lines compiles,
 * i.e. when a contract stops catching a wrong name, params or answer.
 */
export async function compileTimeChecks(caller: Caller) {
  // @ts-expect-error an action no contract declares
  await call(caller, 'geo.nothing', {});
  // @ts-expect-error params of another shape
  await call(caller, 'geo.findArea', { country: 'NG' });
  const key = await call(caller, 'account.resolveApiKey', { hash: 'a'.repeat(64) });
  // @ts-expect-error the answer may be null
  void key.id;
  // @ts-expect-error a payload of another event
  await broadcast({ broadcast: () => undefined }, 'geo.fleetTypesChanged', { hash: 'x' });
  implement('account.resolveApiKey', {
    params: resolveApiKeyParams,
    // @ts-expect-error an answer that is not the contract's
    handler: () => ({ id: 1 }),
  });
  implement('account.resolveApiKey', {
    // @ts-expect-error params of another shape
    params: Joi.object<{ key: string }>({ key: Joi.string() }),
    handler: () => null,
  });
}

describe('broadcast()', () => {
  it('broadcasts the event with its payload', async () => {
    const sent: unknown[][] = [];
    await broadcast(
      { broadcast: (...args: unknown[]) => sent.push(args) },
      'geo.fleetTypesChanged',
      {
        fleetTypeId: 'f-1',
      },
    );
    expect(sent).toEqual([['geo.fleetTypesChanged', { fleetTypeId: 'f-1' }]]);
  });
});

describe('implement()', () => {
  const resolveApiKey = implement('account.resolveApiKey', {
    params: resolveApiKeyParams,
    handler: () => null,
  });

  it('is accepted under the name of its contract', () => {
    expect(() => toServiceSchema({ name: 'account', actions: { resolveApiKey } })).not.toThrow();
  });

  it('is refused under another name, before the service starts', () => {
    expect(() => toServiceSchema({ name: 'account', actions: { findKey: resolveApiKey } })).toThrow(
      'account.findKey implements the contract of account.resolveApiKey',
    );
    expect(() => toServiceSchema({ name: 'keys', actions: { resolveApiKey } })).toThrow(
      /keys\.resolveApiKey/,
    );
  });
});

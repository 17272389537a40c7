import { hashProofCode } from '../../../services/order/codes';
import type { ProofRecord } from '../../../services/order/delivery-record';
import { MAX_WRONG_CODES, ProofChecks } from '../../../services/order/proofs';
import type { OrderStore } from '../../../services/order/store';

const SECRET = 'proof-secret-for-the-unit-test';
const RIGHT = '123456';
const WRONG = '999999';

/**
 * The proof codes and tries of an order store, in memory. Every call waits a turn first, as a
 * database call does, so that tries started together interleave as they do on the server.
 */
class MemoryProofs {
  readonly tries = new Set<string>();
  readonly codes = new Map<string, string>();

  private turn = () => new Promise<void>((next) => setImmediate(next));

  async proofCode(proofId: string, generation: number): Promise<string | null> {
    await this.turn();
    return this.codes.get(`${proofId}:${generation}`) ?? null;
  }

  /** Done right after a try is claimed: what happens elsewhere while a code is compared. */
  meanwhile: (() => void) | undefined;

  async claimProofAttempt(proofId: string, generation: number, n: number): Promise<boolean> {
    await this.turn();
    this.meanwhile?.();
    const id = `${proofId}:${generation}:${n}`;
    if (this.tries.has(id)) return false;
    this.tries.add(id);
    return true;
  }

  async releaseProofAttempt(proofId: string, generation: number, n: number): Promise<void> {
    await this.turn();
    this.tries.delete(`${proofId}:${generation}:${n}`);
  }
}

function setUp() {
  const store = new MemoryProofs();
  // Only the proof methods are called; the rest of the store has no part in a check.
  const checks = new ProofChecks(store as unknown as OrderStore, SECRET, 'staging');
  const proof: ProofRecord = {
    id: 'proof-1',
    type: 'DELIVERY',
    codeHash: hashProofCode(SECRET, 'proof-1', RIGHT),
    code: null,
    isActive: true,
    scannedAt: null,
    createdAt: new Date(),
  };
  const statusOf = (code: string) =>
    checks.check(proof, code).then(
      () => 200,
      (err: { code: number }) => err.code,
    );
  return { store, statusOf };
}

describe('proof codes', () => {
  it('compare at most five codes however many come at once: a right code after them is refused', async () => {
    const { store, statusOf } = setUp();
    const guesses = Array.from({ length: 19 }, () => statusOf(WRONG));
    const statuses = await Promise.all([...guesses, statusOf(RIGHT)]);
    expect(statuses.filter((s) => s === 422)).toHaveLength(MAX_WRONG_CODES - 1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(20 - (MAX_WRONG_CODES - 1));
    expect(statuses.at(-1)).toBe(409);
    expect(store.tries.size).toBe(MAX_WRONG_CODES);
  });

  it('count a right code as no try: five wrong ones after it still lock at the fifth', async () => {
    const { store, statusOf } = setUp();
    expect(await statusOf(RIGHT)).toBe(200);
    expect(store.tries.size).toBe(0);
    const after = [];
    for (let i = 0; i < MAX_WRONG_CODES + 1; i++) after.push(await statusOf(WRONG));
    expect(after).toEqual([422, 422, 422, 422, 409, 409]);
  });

  it('start the count again with a new code from the merchant', async () => {
    const { store, statusOf } = setUp();
    for (let i = 0; i < MAX_WRONG_CODES; i++) await statusOf(WRONG);
    expect(await statusOf(RIGHT)).toBe(409);
    store.codes.set('proof-1:2', hashProofCode(SECRET, 'proof-1', '654321'));
    expect(await statusOf(RIGHT)).toBe(422);
    expect(await statusOf('654321')).toBe(200);
  });

  it('refuse the old code once a new one was issued while it was being compared', async () => {
    const { store, statusOf } = setUp();
    // The merchant issues a new code between the check's read of the current one and its answer.
    store.meanwhile = () =>
      store.codes.set('proof-1:2', hashProofCode(SECRET, 'proof-1', '654321'));
    expect(await statusOf(RIGHT)).toBe(422);
    store.meanwhile = undefined;
    expect(await statusOf('654321')).toBe(200);
  });
});

import { hashProofCode } from '../../../services/order/codes';
import type {
  DeliveryRecord,
  ProofRecord,
  StoredAddress,
} from '../../../services/order/delivery-record';
import type { NotificationRecord } from '../../../services/order/notifications';
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
  readonly messages = new Map<string, NotificationRecord>();
  /** The next enqueue fails, as a database gone away does. */
  failEnqueue = false;

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

  async proofAttemptsTaken(proofId: string, generation: number, max: number): Promise<number> {
    await this.turn();
    return Array.from({ length: max }, (_, i) => `${proofId}:${generation}:${i + 1}`).filter((id) =>
      this.tries.has(id),
    ).length;
  }

  async releaseProofAttempt(proofId: string, generation: number, n: number): Promise<void> {
    await this.turn();
    this.tries.delete(`${proofId}:${generation}:${n}`);
  }

  async claimProofCode(proofId: string, generation: number, codeHash: string): Promise<boolean> {
    await this.turn();
    const id = `${proofId}:${generation}`;
    if (this.codes.has(id)) return false;
    this.codes.set(id, codeHash);
    return true;
  }

  async enqueue(messages: NotificationRecord[]): Promise<void> {
    await this.turn();
    if (this.failEnqueue) {
      this.failEnqueue = false;
      throw new Error('connection closed');
    }
    for (const m of messages) this.messages.set(m._id, m);
  }

  async anyNotificationStored(ids: readonly string[]): Promise<boolean> {
    await this.turn();
    return ids.some((id) => this.messages.has(id));
  }

  async supersedeMessages(): Promise<void> {
    await this.turn();
  }

  /** A code issued by the merchant: its hash kept and its messages queued. */
  issue(generation: number, code: string) {
    this.codes.set(`proof-1:${generation}`, hashProofCode(SECRET, 'proof-1', code));
    this.messages.set(`delivery-1:DELIVERY_CODE:SMS:${generation}`, {} as NotificationRecord);
  }

  /** The code the last queued message carries. */
  lastSent(): string | undefined {
    return /code is (\d{6})/.exec([...this.messages.values()].at(-1)?.text ?? '')?.[1];
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
    checks.check('delivery-1', proof, code).then(
      () => 200,
      (err: { code: number }) => err.code,
    );
  const delivery = {
    _id: 'delivery-1',
    trackingId: 'P2P-TEST',
    destinationId: 'stop-1',
    lifecycle: { status: 'IN_TRANSIT' },
    proofs: [proof],
  } as unknown as DeliveryRecord;
  const stop = { fields: { contactPhone: '+2348000000000' } } as unknown as StoredAddress;
  const issueAgain = () => checks.issueAgain(delivery, 'proof-1', new Map([['stop-1', stop]]));
  return { store, statusOf, issueAgain, checks, proof };
}

describe('proof codes', () => {
  it('compare at most five codes however many come at once: a right code after them is refused', async () => {
    const { store, statusOf } = setUp();
    const guesses = Array.from({ length: 19 }, () => statusOf(WRONG));
    const statuses = await Promise.all([...guesses, statusOf(RIGHT)]);
    // A wrong code says how many tries are left as it reads them, those of the others taken at
    // once included: none left, it reads the proof locked (409), as it is.
    expect(statuses.filter((s) => s === 422).length).toBeLessThanOrEqual(MAX_WRONG_CODES - 1);
    expect(statuses.every((s) => s === 422 || s === 409)).toBe(true);
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

  it('say the tries left from the tries taken, not from their own try’s number', async () => {
    const { store, statusOf, checks, proof } = setUp();
    // The third taken by another call (a wrong code that came while a right one held the
    // second, given back since): the next wrong code takes the first, and two are taken.
    store.tries.add('proof-1:1:3');
    await expect(checks.check('delivery-1', proof, WRONG)).rejects.toMatchObject({
      code: 422,
      message: expect.stringMatching(/; 3 tries left before it locks$/),
    });
    expect(await statusOf(WRONG)).toBe(422);
    expect(await statusOf(WRONG)).toBe(422);
    expect(await statusOf(WRONG)).toBe(409);
  });

  it('start the count again with a new code from the merchant', async () => {
    const { store, statusOf } = setUp();
    for (let i = 0; i < MAX_WRONG_CODES; i++) await statusOf(WRONG);
    expect(await statusOf(RIGHT)).toBe(409);
    store.issue(2, '654321');
    expect(await statusOf(RIGHT)).toBe(422);
    expect(await statusOf('654321')).toBe(200);
  });

  it('refuse the old code once a new one was issued while it was being compared', async () => {
    const { store, statusOf } = setUp();
    // The merchant issues a new code between the check's read of the current one and its answer.
    store.meanwhile = () => store.issue(2, '654321');
    expect(await statusOf(RIGHT)).toBe(422);
    store.meanwhile = undefined;
    expect(await statusOf('654321')).toBe(200);
  });

  it('keep the old code working when a new one could not be queued, and the next new one works', async () => {
    const { store, statusOf, issueAgain } = setUp();
    store.failEnqueue = true;
    await expect(issueAgain()).rejects.toThrow('connection closed');
    // Nobody was told of a new code: the one they hold still works.
    expect(await statusOf(RIGHT)).toBe(200);
    await issueAgain();
    const sent = store.lastSent() ?? '';
    expect(sent).toMatch(/^\d{6}$/);
    expect(await statusOf(sent)).toBe(200);
  });
});

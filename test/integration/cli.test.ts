import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEMO_COURIERS, demoCourierId } from '../../services/seed';
import { bulkCredits } from '../support/ledger';
import { dropDatabases, isolation, openServiceDatabase, type Isolation } from '../support/stack';

/**
 * The operator CLI against the real database: it runs the services it needs in its own
 * broker, so no platform process is started here.
 */
const iso = isolation();
const CLI = join(__dirname, '..', '..', 'bin', 'waybill.ts');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

const cli = (...args: string[]) => cliIn(iso, {}, args);

/** A command in isolation `where`, with `more` in its environment. */
async function cliIn(where: Isolation, more: NodeJS.ProcessEnv, args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NAMESPACE: where.namespace,
    MONGO_DB_PREFIX: where.dbPrefix,
    LOG_LEVEL: 'warn',
    ...more,
  };
  delete env.NATS_URL; // on its own: nothing else runs in this isolation
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', CLI, ...args],
      { env, cwd: join(__dirname, '..', '..') },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

afterAll(() => dropDatabases(iso));

/** A command's printed JSON, once it has ended well. */
const json = (run: Run) => {
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
  return JSON.parse(run.stdout);
};

/** The demo merchant, once `seed` has run: the courier commands use it too. */
let demoUserId: string;

describe("waybill CLI: another environment's database", () => {
  const live = isolation();
  afterAll(() => dropDatabases(live));

  it('refuses to act on a database a live platform recorded as its own, from a staging shell', async () => {
    const db = await openServiceDatabase(live, 'account');
    try {
      await db
        .collection<{ _id: string; appEnv: string; at: Date }>('deployment')
        .insertOne({ _id: 'environment', appEnv: 'live', at: new Date() });
    } finally {
      await db.close();
    }
    for (const args of [['users:find'], ['seed']]) {
      const refused = await cliIn(live, { APP_ENV: 'staging' }, args);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(
        "waybill: invalid configuration: APP_ENV: this database is a live platform's (recorded when it first started), and this command runs as staging; run it with APP_ENV=live",
      );
    }
    // Refused before any service started: nothing was written, not even a collection.
    for (const service of ['payment', 'geo', 'matching']) {
      const db = await openServiceDatabase(live, service);
      try {
        expect(await db.listCollections()).toEqual([]);
      } finally {
        await db.close();
      }
    }
  }, 60_000);
});

describe('waybill CLI: users and keys', () => {
  it("creates a user and keys, and pages through the user's keys, newest first", async () => {
    const user = json(
      await cli(
        'users:create',
        '--name',
        'Kemi Adeyemi',
        '--email',
        `kemi-${Date.now()}@example.com`,
        '--phone',
        '+2348031234567',
      ),
    );
    const first = json(await cli('keys:create', user.id));
    const second = json(await cli('keys:create', user.id, '--browser'));
    // A window alone would be dropped: refused, before any key is made.
    const windowAlone = await cli('keys:create', user.id, '--quota-window', '30');
    expect(windowAlone.code).toBe(1);
    expect(windowAlone.stderr).toMatch(/--quota-window needs --quota-limit/);
    const ids = (run: Run) => json(run).map((k: { id: string }) => k.id);
    expect(ids(await cli('keys:list', user.id))).toEqual([second.id, first.id]);
    expect(ids(await cli('keys:list', user.id, '--limit', '1'))).toEqual([second.id]);
    expect(ids(await cli('keys:list', user.id, '--limit', '1', '--offset', '1'))).toEqual([
      first.id,
    ]);
    // A command records no environment: only a platform's start does.
    const accounts = await openServiceDatabase(iso, 'account');
    try {
      expect(await accounts.collection('deployment').countDocuments()).toBe(0);
    } finally {
      await accounts.close();
    }
  }, 60_000);
});

describe('waybill CLI: wallets', () => {
  it('lists the wallet and ledger commands in --help', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/wallet/);
    expect(help.stdout).toMatch(/ledger/);
    const wallet = await cli('wallet', '--help');
    expect(wallet.stdout).toMatch(/credit \[options\] <userId>/);
    expect(wallet.stdout).toMatch(/show <userId>/);
  });

  it('seeds the demo merchant with a funded wallet and couriers, once however often it runs', async () => {
    const first = await cli('seed');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Demo wallet: NGN 100000\.00/);
    demoUserId = /\(id ([0-9a-f-]{36})\)/.exec(first.stdout)?.[1] as string;
    const couriers = (out: string) => out.split('\n').filter((l) => l.startsWith('Demo courier'));
    expect(couriers(first.stdout)).toEqual(
      DEMO_COURIERS.map(
        (c) => `Demo courier in ${c.city}: ${c.name}, ${c.regNo} (id ${demoCourierId(c)})`,
      ),
    );
    expect(new Set(DEMO_COURIERS.map((c) => c.city))).toEqual(new Set(['Lagos', 'Abuja']));
    const second = await cli('seed');
    expect(second.stdout).toMatch(/Demo wallet: NGN 100000\.00/);
    expect(second.stdout).toMatch(/already has a staging API key/);
    expect(couriers(second.stdout)).toEqual(couriers(first.stdout));

    const all = await cli('couriers', 'list');
    expect(JSON.parse(all.stdout)).toHaveLength(DEMO_COURIERS.length);
    const listed = await cli('couriers', 'merchant-list', demoUserId);
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ id: demoCourierId(DEMO_COURIERS[0]), active: true }),
    ]);
  }, 60_000);

  it('credits once per reference, shows the wallet and reconciles the ledger', async () => {
    for (let i = 0; i < 2; i++) {
      const credited = await cli(
        'wallet',
        'credit',
        demoUserId,
        '--amount',
        '250.5',
        '--reference',
        'cli-1',
      );
      expect(credited.code).toBe(0);
      expect(JSON.parse(credited.stdout)).toMatchObject({ balance: '100250.50', currency: 'NGN' });
    }
    const shown = await cli('wallet', 'show', demoUserId);
    expect(JSON.parse(shown.stdout)).toMatchObject({ userId: demoUserId, balance: '100250.50' });
    const verified = await cli('ledger', 'verify');
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ clean: true, wallets: 1, entries: 2 });
  }, 60_000);

  it('says what is wrong with a bad amount or an unknown user, and exits 1', async () => {
    const tooPrecise = await cli(
      'wallet',
      'credit',
      demoUserId,
      '--amount',
      '1.005',
      '--reference',
      'x',
    );
    expect(tooPrecise.code).toBe(1);
    expect(tooPrecise.stderr).toMatch(/amount.*at most 2 decimal places/);
    // Numbers JavaScript reads that no receipt says: refused, not 500 or 1000.
    for (const amount of ['0x1f4', '1e3', ' 5', '-5', '5.']) {
      const odd = await cli('wallet', 'credit', demoUserId, '--amount', amount, '--reference', 'y');
      expect({ amount, code: odd.code }).toEqual({ amount, code: 1 });
      expect(odd.stderr).toMatch(/--amount.*must be naira with at most 2 decimal places/);
    }
    const unknown = await cli('wallet', 'show', '4b0e8d3c-2f1a-4c5b-9d8e-7f6a5b4c3d2e');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not found/);
  }, 60_000);
});

describe('waybill CLI: operator tokens, and who a command acts as', () => {
  const own = isolation();
  afterAll(() => dropDatabases(own));
  const as = (operator: string | undefined, ...args: string[]) =>
    cliIn(own, operator === undefined ? {} : { WAYBILL_OPERATOR: operator }, args);

  it('makes, lists and revokes operator tokens, recording who made and revoked them', async () => {
    const created = json(await as('ada', 'operators', 'create', '--name', 'bola@ops'));
    expect(created).toMatchObject({
      name: 'bola@ops',
      token: expect.stringMatching(/^wbo_[A-Za-z0-9_-]{43}$/),
      createdBy: 'cli:ada',
      expiresAt: null,
    });
    const expiring = json(
      await as(undefined, 'operators', 'create', '--name', 'temp', '--expires-in-days', '7'),
    );
    expect(expiring).toMatchObject({ createdBy: 'cli', expiresAt: expect.any(String) });

    const revoked = await as('ada', 'operators', 'revoke', created.id);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`operator token ${created.id} revoked`);
    expect(revoked.stderr).toMatch(/NATS_URL is not set, so no running gateway was told/);

    const listed = json(await as(undefined, 'operators', 'list'));
    expect(listed).toEqual([
      expect.objectContaining({ id: expiring.id, revokedAt: null }),
      expect.objectContaining({ id: created.id, revokedBy: 'cli:ada' }),
    ]);
    expect(JSON.stringify(listed)).not.toContain(created.token);

    const reserved = await as(undefined, 'operators', 'create', '--name', 'admin-token');
    expect(reserved.code).toBe(1);
    expect(reserved.stderr).toMatch(/may not be admin-token or cli/);
  }, 60_000);

  it("records the command's operator on the wallet entries it posts", async () => {
    const user = json(
      await as(
        undefined,
        'users:create',
        '--name',
        'Ada Obi',
        '--email',
        `cli-${randomUUID()}@example.com`,
        '--phone',
        '+2348031234567',
      ),
    );
    const credited = await as(
      'ada',
      'wallet',
      'credit',
      user.id,
      '--amount',
      '10',
      '--reference',
      'op-1',
    );
    expect(credited.code).toBe(0);
    expect(credited.stderr).toBe('');
    // Its log, on stderr (stdout is the answer), names the operator; nothing of the broker's.
    const logged = await cliIn(
      own,
      { WAYBILL_OPERATOR: 'ada', LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      ['wallet', 'credit', user.id, '--amount', '5', '--reference', 'op-2'],
    );
    expect(JSON.parse(logged.stdout)).toMatchObject({ userId: user.id, balance: '15.00' });
    const lines = logged.stderr
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'wallet credited by an operator',
        reference: 'op-2',
        operator: 'cli:ada',
        nodeID: expect.stringMatching(/^cli-.+-\d+-[0-9a-f]{6}$/),
      }),
    ]);
    const db = await openServiceDatabase(own, 'payment');
    try {
      expect(await db.collection('ledger_entries').findOne({ walletId: user.id })).toMatchObject({
        reference: 'admin:op-1',
        postedBy: 'cli:ada',
      });
    } finally {
      await db.close();
    }
  }, 60_000);
});

describe('waybill CLI: a ledger too large to verify within a request', () => {
  const large = isolation();
  afterAll(() => dropDatabases(large));

  it('verifies it all the same: the command is not held to REQUEST_TIMEOUT_MS', async () => {
    const entries = bulkCredits(randomUUID(), 20_000);
    const db = await openServiceDatabase(large, 'payment');
    try {
      for (let i = 0; i < entries.length; i += 5_000) {
        await db.collection('ledger_entries').insertMany(entries.slice(i, i + 5_000) as never[]);
      }
    } finally {
      await db.close();
    }
    const verified = await cliIn(large, { REQUEST_TIMEOUT_MS: '100' }, ['ledger', 'verify']);
    expect({ code: verified.code, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(verified.stdout)).toMatchObject({ clean: true });
  }, 120_000);
});

describe('waybill CLI: uncredited payments', () => {
  it('lists the charges no checkout credits, newest first, and settles each once', async () => {
    // As the payment service records a charge of another amount than its checkout's.
    const db = await openServiceDatabase(iso, 'payment');
    const at = Date.now();
    const [older, newer] = [`cli-paid-${at}-1`, `cli-paid-${at}-2`];
    await db.collection('uncredited_payments').insertMany(
      [older, newer].map((reference, i) => ({
        _id: reference as never,
        checkoutReference: `checkout-${reference}`,
        userId: demoUserId,
        why: 'the provider reports 6900 kobo, the checkout is for 7000',
        at: new Date(at + i * 1_000),
      })),
    );
    await db.close();
    const references = (run: Run) => {
      expect(run.code).toBe(0);
      return (JSON.parse(run.stdout) as { providerReference: string }[]).map(
        (p) => p.providerReference,
      );
    };

    expect(references(await cli('payments', 'uncredited'))).toEqual([newer, older]);
    expect(
      references(await cli('payments', 'uncredited', '--limit', '1', '--after', newer)),
    ).toEqual([older]);
    const settle = (note: string) => cli('payments', 'settle', newer, '--note', note);
    const settled = await settle('refunded at Paystack, ref RF-9');
    expect(settled.code).toBe(0);
    expect(JSON.parse(settled.stdout)).toMatchObject({
      providerReference: newer,
      settlement: { note: 'refunded at Paystack, ref RF-9', settledBy: 'cli' },
    });
    expect((await settle('refunded at Paystack, ref RF-9')).code).toBe(0);
    const another = await settle('refunded twice?');
    expect(another.code).toBe(1);
    expect(another.stderr).toMatch(/refunded at Paystack, ref RF-9/);
    expect(references(await cli('payments', 'uncredited', '--unsettled'))).toEqual([older]);

    const unknown = await cli('payments', 'settle', 'no-such-reference', '--note', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No uncredited payment has reference no-such-reference/);
    const tooMany = await cli('payments', 'uncredited', '--limit', '0');
    expect(tooMany.code).not.toBe(0);
    expect(tooMany.stderr).toMatch(/--limit.*positive integer/);
  }, 60_000);
});

describe('waybill CLI: reversals', () => {
  it('lists refunds made at the provider with what is taken back of each, newest first; the open ones alone', async () => {
    const db = await openServiceDatabase(iso, 'payment');
    const at = Date.now();
    const reversal = (id: string, i: number, taken: number, settled: boolean) => ({
      _id: id as never,
      providerReference: `ck-${id}`,
      checkoutReference: `ck-${id}`,
      userId: demoUserId,
      amountKobo: 5_000,
      receivedAt: new Date(at + i * 1_000),
      credited: true,
      takenKobo: taken,
      parts: 1,
      settledAt: settled ? new Date(at + i * 1_000) : null,
    });
    const [taken, owed] = [`${at}1`, `${at}2`];
    await db
      .collection('checkout_reversals')
      .insertMany([reversal(taken, 0, 5_000, true), reversal(owed, 1, 2_000, false)]);
    await db.close();
    const listed = async (...args: string[]) => {
      const run = await cli('payments', 'reversals', ...args);
      expect(run.code).toBe(0);
      return (JSON.parse(run.stdout) as Record<string, unknown>[]).filter((r) =>
        [taken, owed].includes(r.refundId as string),
      );
    };
    expect(await listed()).toEqual([
      expect.objectContaining({ refundId: owed, state: 'TAKING', taken: '20.00', owed: '30.00' }),
      expect.objectContaining({ refundId: taken, state: 'TAKEN', taken: '50.00', owed: '0.00' }),
    ]);
    expect((await listed('--open')).map((r) => r.refundId)).toEqual([owed]);
  }, 60_000);
});

describe('waybill CLI: refunds to payers', () => {
  it('lists the refunds asked at the provider for payers, newest first, each with its state; those in one state alone', async () => {
    const db = await openServiceDatabase(iso, 'payment');
    const at = Date.now();
    const refund = (reference: string, i: number, state: string, why: string | null) => ({
      _id: reference as never,
      providerReference: `${reference}-1`,
      userId: demoUserId,
      amountKobo: 150_000,
      currency: 'NGN',
      note: 'Refund of a payment for delivery d-1, which no longer needs it',
      requestedAt: new Date(at + i * 1_000),
      state,
      why,
      refundId: state === 'QUEUED' ? '7001' : null,
      settledAt: state === 'OPEN' ? null : new Date(at + i * 1_000),
      tries: 1,
    });
    // Two asked at the same moment are listed by reference, the greater first.
    const [queued, refused, failed] = [`ck-cli${at}a`, `ck-cli${at}b`, `ck-cli${at}c`];
    await db
      .collection('checkout_payer_refunds')
      .insertMany([
        refund(queued, 0, 'QUEUED', null),
        refund(refused, 1, 'REFUSED', 'Not settled'),
        refund(failed, 1, 'FAILED', 'Account closed'),
      ]);
    await db.close();
    const listed = async (...args: string[]) => {
      const run = await cli('payments', 'payer-refunds', ...args);
      expect(run.code).toBe(0);
      return (JSON.parse(run.stdout) as Record<string, unknown>[]).filter((r) =>
        [queued, refused, failed].includes(r.checkoutReference as string),
      );
    };
    expect(await listed()).toEqual([
      expect.objectContaining({
        checkoutReference: failed,
        state: 'FAILED',
        why: 'Account closed',
      }),
      expect.objectContaining({ checkoutReference: refused, state: 'REFUSED', why: 'Not settled' }),
      expect.objectContaining({ checkoutReference: queued, state: 'QUEUED', refundId: '7001' }),
    ]);
    expect((await listed('--state', 'QUEUED')).map((r) => r.checkoutReference)).toEqual([queued]);
    const after = async (reference: string) =>
      (await listed('--after', reference)).map((r) => r.checkoutReference);
    expect(await after(failed)).toEqual([refused, queued]);
    expect(await after(refused)).toEqual([queued]);
    const wrong = await cli('payments', 'payer-refunds', '--state', 'LOST');
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/--state.*LOST.*OPEN, QUEUED, REFUSED, FAILED/s);
  }, 60_000);
});

describe('waybill CLI: couriers', () => {
  const addArgs = (regNo: string) => [
    'couriers',
    'add',
    '--name',
    'Ngozi Okafor',
    '--phone',
    '+2348091234567',
    '--fleet-type',
    'car',
    '--reg-no',
    regNo,
    '--make',
    'Kia',
    '--model',
    'Rio',
    '--colour',
    'Blue',
  ];

  it('lists its commands in --help', async () => {
    const help = await cli('couriers', '--help');
    expect(help.code).toBe(0);
    for (const command of [
      'add [options]',
      'list [options]',
      'show <courierId>',
      'update [options] <courierId>',
      'merchant-add <userId> <courierId>',
      'merchant-remove <userId> <courierId>',
      'merchant-list <userId>',
      'token-create <courierId>',
      'token-list <courierId>',
      'token-revoke <tokenId>',
      'cash [options] <courierId>',
      'remit [options] <courierId>',
    ]) {
      expect(help.stdout).toContain(command);
    }
    expect((await cli('couriers', 'add', '--help')).stdout).toMatch(/--fleet-type <idOrCode>/);
  });

  it('adds, shows, changes and finds a courier; the fleet type by its code', async () => {
    const added = json(await cli(...addArgs('fct 777 cli')));
    expect(added).toMatchObject({
      name: 'Ngozi Okafor',
      fleet: { regNo: 'FCT 777 CLI', make: 'Kia' },
      active: true,
      profilePhoto: null,
    });
    expect(json(await cli('couriers', 'show', added.id))).toEqual(added);

    const changed = json(
      await cli(
        'couriers',
        'update',
        added.id,
        '--colour',
        'Green',
        '--photo',
        'https://photos.example.com/ngozi.jpg',
        '--inactive',
      ),
    );
    expect(changed).toMatchObject({
      fleet: { ...added.fleet, colour: 'Green' },
      profilePhoto: 'https://photos.example.com/ngozi.jpg',
      active: false,
    });
    const cleared = json(await cli('couriers', 'update', added.id, '--no-photo', '--active'));
    expect(cleared).toMatchObject({ profilePhoto: null, active: true });

    expect(json(await cli('couriers', 'list', '--reg-no', 'FCT-777-CLI'))).toEqual([]);
    expect(json(await cli('couriers', 'list', '--reg-no', 'fct 777 cli'))).toEqual([cleared]);
    // The fleet type by its code in a filter too.
    const cars = json(await cli('couriers', 'list', '--fleet-type', 'car', '--limit', '500'));
    expect(cars.map((c: { id: string }) => c.id)).toContain(added.id);
    expect(json(await cli('couriers', 'list', '--fleet-type', 'bike', '--limit', '500'))).toEqual(
      expect.not.arrayContaining([expect.objectContaining({ id: added.id })]),
    );
  }, 60_000);

  it("puts a courier on a merchant's list and takes it off", async () => {
    const courier = json(await cli(...addArgs('CLI-2')));
    const added = await cli('couriers', 'merchant-add', demoUserId, courier.id);
    expect(added.stdout.trim()).toBe(`courier ${courier.id} is on the list of user ${demoUserId}`);
    const listed = json(await cli('couriers', 'merchant-list', demoUserId));
    expect(listed.map((c: { id: string }) => c.id)).toEqual([
      demoCourierId(DEMO_COURIERS[0]),
      courier.id,
    ]);
    const removed = await cli('couriers', 'merchant-remove', demoUserId, courier.id);
    expect(removed.stdout.trim()).toBe(
      `courier ${courier.id} is off the list of user ${demoUserId}`,
    );
    const again = await cli('couriers', 'merchant-remove', demoUserId, courier.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/is not on the list of user/);
  }, 60_000);

  it('creates a courier token shown once, lists it without the token, and revokes it', async () => {
    const courierId = demoCourierId(DEMO_COURIERS[0]);
    const created = json(await cli('couriers', 'token-create', courierId));
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      courierId,
      token: expect.stringMatching(/^wbc_[A-Za-z0-9_-]{43}$/),
      createdAt: expect.any(String),
      // The CLI acts as `cli` (decision 157), with the platform's own credentials.
      createdBy: 'cli',
      createdByOperatorTokenId: null,
    });
    const listed = json(await cli('couriers', 'token-list', courierId));
    expect(listed).toEqual([
      {
        id: created.id,
        courierId,
        createdAt: created.createdAt,
        createdBy: 'cli',
        createdByOperatorTokenId: null,
        lastUsedAt: null,
      },
    ]);
    const revoked = await cli('couriers', 'token-revoke', created.id);
    expect(revoked.stdout.trim()).toBe(`courier token ${created.id} revoked`);
    // Without NATS_URL no running gateway heard it: said, with how long they may accept it.
    expect(revoked.stderr).toMatch(
      /^waybill: NATS_URL is not set, so no running gateway was told: each accepts the token until its cache of it expires \(up to \d+ s\)/,
    );
    expect(json(await cli('couriers', 'token-list', courierId))).toEqual([]);
    const again = await cli('couriers', 'token-revoke', created.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/Courier token .* not found/);
  }, 60_000);

  it('records cash a courier handed in, once per reference, and shows what they owe', async () => {
    const courierId = demoCourierId(DEMO_COURIERS[1]);
    const remit = (amount: string) =>
      cli('couriers', 'remit', courierId, '--amount', amount, '--reference', 'cli-receipt-1');
    const entry = json(await remit('250.5'));
    expect(entry).toMatchObject({ type: 'CREDIT', amount: '250.50', balance: '250.50' });
    expect(json(await remit('250.5'))).toEqual(entry);
    const other = await remit('99');
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/already used for another posting/);
    expect(json(await cli('couriers', 'cash', courierId, '--limit', '5'))).toMatchObject({
      courierId,
      balance: '250.50',
      owed: '0.00',
      entries: [entry],
    });
    const unknown = await cli('couriers', 'cash', '4b0e8d3c-2f1a-4c5b-9d8e-7f6a5b4c3d2e');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/Courier not found/);
    // Their wallet is apart from their cash: nothing was remitted to them.
    expect(json(await cli('couriers', 'wallet', courierId))).toMatchObject({
      courierId,
      balance: '0.00',
      entries: [],
    });
  }, 60_000);

  it('says what is wrong and exits 1', async () => {
    const taken = await cli(...addArgs(DEMO_COURIERS[0].regNo));
    expect(taken.code).toBe(1);
    expect(taken.stderr).toContain(
      `Registration number ${DEMO_COURIERS[0].regNo} is already registered to courier ${demoCourierId(DEMO_COURIERS[0])}`,
    );
    const plane = await cli(
      'couriers',
      'update',
      demoCourierId(DEMO_COURIERS[1]),
      '--fleet-type',
      'plane',
    );
    expect(plane.code).toBe(1);
    expect(plane.stderr).toMatch(
      /--fleet-type: no fleet type with code plane; the codes are bike, car/,
    );
    const nothing = await cli('couriers', 'update', demoCourierId(DEMO_COURIERS[1]));
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/Send at least one of name, phone, profilePhoto, fleet, active/);
    const both = await cli('couriers', 'list', '--active', '--inactive');
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/cannot be used with/);
    const missing = await cli('couriers', 'show', '4b0e8d3c-2f1a-4c5b-9d8e-7f6a5b4c3d2e');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/Courier not found/);
  }, 60_000);
});

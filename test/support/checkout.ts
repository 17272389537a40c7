import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ServiceSchema } from 'moleculer';
import type { PaymentFailure, PaymentOutcome } from '../../libs/contracts/payment';
import { request } from './http';

/** Every payment outcome event a test's broker receives, in order. */
export interface OutcomeLog {
  received: { name: string; payload: PaymentOutcome | PaymentFailure }[];
  of(reference: string): { name: string; payload: PaymentOutcome | PaymentFailure }[];
}

/** A consumer of the payment outcomes (as the order service will be), for `startClient`. */
export function outcomeListener(): { log: OutcomeLog; schema: ServiceSchema } {
  const received: OutcomeLog['received'] = [];
  const log: OutcomeLog = {
    received,
    of: (reference) => received.filter((r) => r.payload.reference === reference),
  };
  const record = (name: string) => (ctx: { params: PaymentOutcome }) => {
    received.push({ name, payload: ctx.params });
  };
  return {
    log,
    schema: {
      name: 'outcome-probe',
      events: {
        'payment.succeeded': { handler: record('payment.succeeded') },
        'payment.failed': { handler: record('payment.failed') },
      },
    },
  };
}

/** The path of the page an `authorization_url` names, to be opened on the test's gateway. */
export const pagePath = (authorizationUrl: string) => new URL(authorizationUrl).pathname;

/** A form post of the sandbox page, as a browser sends it, without following the redirect. */
export async function postForm(base: string, path: string) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'pay=',
    redirect: 'manual',
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * A funding checkout of `userId`'s wallet as `payment.startCheckout` takes it: through the
 * contract, as the order service calls it and retries it (the gateway would hold a failed
 * request's key for its pending window).
 */
export const walletFundingParams = (
  userId: string,
  amountKobo: number,
  idempotencyKey: string = randomUUID(),
) => ({
  userId,
  amountKobo,
  purpose: { kind: 'WALLET_FUNDING' as const, id: userId },
  email: 'alice@example.com',
  merchantName: 'Alice',
  idempotencyKey,
});

/** Funds `who`'s wallet through a checkout: the 201's checkout payload. */
export async function fund(base: string, key: string, amount: number, idempotencyKey?: string) {
  const headers: Record<string, string> = { 'api-key': key };
  if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
  return request(base, 'POST', '/api/wallet/fund', { headers, json: { amount } });
}

export async function walletOf(base: string, key: string) {
  const wallet = await request(base, 'GET', '/api/wallet', { headers: { 'api-key': key } });
  const entries = await request(base, 'GET', '/api/wallet/transactions?limit=100', {
    headers: { 'api-key': key },
  });
  return { balance: wallet.body.data.balance as string, entries: entries.body.data as unknown[] };
}

/** Debian's chromium, or WAYBILL_CHROMIUM. */
export const CHROMIUM = process.env.WAYBILL_CHROMIUM ?? '/usr/bin/chromium';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Chromium with a fresh profile; `close()` removes it. */
export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  const profile = await mkdtemp(join(tmpdir(), 'waybill-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    return {
      context,
      async close() {
        await context.close();
        await rm(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(profile, { recursive: true, force: true });
    throw new Error(
      `Chromium did not start from ${CHROMIUM} (install it with \`scripts/infra browser\`, or set WAYBILL_CHROMIUM): ${String(err)}`,
    );
  }
}

/** A transaction the fake provider knows. */
export interface FakeTransaction {
  id: number;
  amount: number;
  currency: string;
  status: string;
  email: string;
  metadata: unknown;
}

/**
 * A small Paystack-compatible provider: initialize, verify and refund with the Bearer secret,
 * amounts in kobo; a reference initialized once is refused ever after, as Paystack refuses
 * it; a transaction refunded (whole) still reads paid while its refund is pending, refuses
 * another refund, and lists it (`GET /refund?transaction=<its id>`). `fail` makes the next calls of a kind answer 500, hang, refuse, or carry on and answer
 * only after `lateMs`.
 */
export class FakePaystack {
  readonly transactions = new Map<string, FakeTransaction>();
  /**
   * The refunds it queued, in order: each whole, and one at most per transaction that has not
   * failed (`status: 'failed'` makes its transaction refundable again); and those an operator
   * made from the dashboard (`refundFromDashboard`).
   */
  readonly refunds: {
    id: number;
    transaction: string;
    amount: number;
    currency: string;
    note: string;
    status: string;
  }[] = [];
  private nextId = 1_000_000;
  /** Answers a queued refund without its id, as a provider's answer may come. */
  refundsAnsweredWithoutId = false;
  /** Lists every refund, whatever transaction is asked: what a client must not trust. */
  listIgnoresFilter = false;
  readonly calls: { method: string; path: string; authorization?: string; body?: unknown }[] = [];
  /** Calls of a kind still to fail, and how. */
  readonly fail = {
    initialize: 0,
    verify: 0,
    refund: 0,
    listRefunds: 0,
    mode: 'error' as 'error' | 'hang' | 'refuse' | 'late',
    lateMs: 0,
  };
  /** The payment page it names for a transaction (a test may make it a bad one). */
  paymentLink = (reference: string) => `https://checkout.paystack.test/${reference}`;
  /**
   * Runs before a verification is answered (and may change the transaction it answers): what
   * happens elsewhere while the caller waits for the provider.
   */
  beforeVerify: ((reference: string) => Promise<void> | void) | undefined;
  private server: Server | undefined;
  url = '';

  constructor(readonly secret: string) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /**
   * A refund an operator makes from Paystack's dashboard, processed at once: of `amount` kobo
   * (the whole transaction by default). The transaction takes no other refund after it.
   */
  refundFromDashboard(transaction: string, amount?: number) {
    const paid = this.transactions.get(transaction);
    if (!paid) throw new Error(`no transaction ${transaction}`);
    const refund = {
      id: this.nextId++,
      transaction,
      amount: amount ?? paid.amount,
      currency: paid.currency,
      note: 'Refunded from the dashboard',
      status: 'processed',
    };
    this.refunds.push(refund);
    return refund;
  }

  /** Signs a body as the provider signs its webhooks. */
  sign(body: string): string {
    return createHmac('sha512', this.secret).update(body).digest('hex');
  }

  /** Sends `body` to the webhook of the gateway at `base`, signed as the provider signs it. */
  sendWebhook(base: string, body: string) {
    return request(base, 'POST', '/webhooks/paystack', {
      headers: { 'content-type': 'application/json', 'x-paystack-signature': this.sign(body) },
      raw: body,
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text ? JSON.parse(text) : undefined;
    const path = req.url ?? '/';
    this.calls.push({
      method: req.method ?? '',
      path,
      authorization: req.headers.authorization,
      body,
    });
    let send = (status: number, json: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    };
    if (req.headers.authorization !== `Bearer ${this.secret}`) {
      return send(401, { status: false, message: 'Invalid key' });
    }
    const kind = path.startsWith('/transaction/initialize')
      ? 'initialize'
      : path === '/refund'
        ? 'refund'
        : path.startsWith('/refund')
          ? 'listRefunds'
          : 'verify';
    if (this.fail[kind] > 0 && this.fail.mode === 'late') {
      this.fail[kind]--;
      // Does its work now, answers after the caller gave up.
      const answer = send;
      send = (status, json) => void setTimeout(() => answer(status, json), this.fail.lateMs);
    } else if (this.fail[kind] > 0) {
      this.fail[kind]--;
      if (this.fail.mode === 'hang') return; // never answers: the caller's timeout ends it
      if (this.fail.mode === 'refuse') {
        return send(400, { status: false, message: 'Duplicate Transaction Reference' });
      }
      return send(500, { status: false, message: 'Internal error' });
    }
    if (req.method === 'POST' && kind === 'initialize') {
      const { reference, amount, currency, email, metadata } = body;
      if (!Number.isInteger(amount) || amount <= 0) {
        return send(400, { status: false, message: 'Invalid amount' });
      }
      if (this.transactions.has(reference)) {
        return send(400, { status: false, message: 'Duplicate Transaction Reference' });
      }
      this.transactions.set(reference, {
        id: this.nextId++,
        amount,
        currency,
        email,
        metadata,
        status: 'abandoned',
      });
      return send(200, {
        status: true,
        message: 'Authorization URL created',
        data: {
          authorization_url: this.paymentLink(reference),
          access_code: `ac_${reference.slice(-8)}`,
          reference,
        },
      });
    }
    if (req.method === 'POST' && kind === 'refund') {
      const { transaction, amount, currency, merchant_note: note } = body;
      const refunded = this.transactions.get(transaction);
      if (!refunded) return send(400, { status: false, message: 'Transaction not found' });
      if (refunded.status !== 'success') {
        return send(400, { status: false, message: 'Cannot refund a transaction not successful' });
      }
      if (amount !== refunded.amount || currency !== refunded.currency) {
        return send(400, { status: false, message: 'Refund amount or currency does not match' });
      }
      if (this.refunds.some((r) => r.transaction === transaction && r.status !== 'failed')) {
        return send(400, {
          status: false,
          message: 'A refund for this transaction exists already',
        });
      }
      // Paystack's transaction reads paid while its refund is pending, for days.
      const refund = { id: this.nextId++, transaction, amount, currency, note, status: 'pending' };
      this.refunds.push(refund);
      return send(200, {
        status: true,
        message: 'Refund has been queued for processing',
        data: {
          ...(this.refundsAnsweredWithoutId ? {} : { id: refund.id }),
          transaction: { reference: transaction, amount },
          amount,
          currency,
          status: refund.status,
        },
      });
    }
    const listed = /^\/refund\?transaction=([0-9]+)/.exec(path);
    if (req.method === 'GET' && listed) {
      const idOf = (reference: string) => this.transactions.get(reference)?.id;
      return send(200, {
        status: true,
        message: 'Refunds retrieved',
        data: this.refunds
          .filter((r) => this.listIgnoresFilter || String(idOf(r.transaction)) === listed[1])
          .map((r) => ({
            id: r.id,
            transaction: idOf(r.transaction),
            status: r.status,
            amount: r.amount,
            currency: r.currency,
          })),
      });
    }
    const match = /^\/transaction\/verify\/([^/?]+)$/.exec(path);
    if (match) await this.beforeVerify?.(decodeURIComponent(match[1]));
    const found = match && this.transactions.get(decodeURIComponent(match[1]));
    if (req.method !== 'GET' || !found) {
      return send(400, { status: false, message: 'Transaction reference not found' });
    }
    return send(200, {
      status: true,
      message: 'Verification successful',
      data: {
        id: found.id,
        reference: decodeURIComponent((match as RegExpExecArray)[1]),
        status: found.status,
        amount: found.amount,
        currency: found.currency,
      },
    });
  }
}

/**
 * A fake Paystack started before the test's stack, and the environment that points the
 * payment service at it (`env` added to it); stopped after the tests.
 */
export function useFakePaystack(secret: string, env: Record<string, string> = {}) {
  const fake = new FakePaystack(secret);
  const paystackEnv: Record<string, string> = {
    PAYMENT_PROVIDER: 'paystack',
    PAYSTACK_SECRET_KEY: secret,
    PAYSTACK_TIMEOUT_MS: '1000',
    ...env,
  };
  beforeAll(async () => {
    await fake.start();
    paystackEnv.PAYSTACK_BASE_URL = fake.url;
  });
  afterAll(() => fake.stop());
  return { fake, env: paystackEnv };
}

/**
 * Every service but order: the outbox tests pay for made-up deliveries, whose outcomes must
 * wait for the acknowledgement only the test's listener gives (order would credit and ack them).
 */
export const SERVICES_WITHOUT_ORDER = 'gateway,account,geo,pricing,package,file,payment';

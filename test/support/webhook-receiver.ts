import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  createServer,
  type IncomingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The webhook service at test speed: local receivers allowed, a dispatcher that looks often,
 * retries within a second, and an endpoint that does not answer in 1 s has failed.
 */
export const FAST_WEBHOOKS = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_DISPATCH_INTERVAL_MS: '100',
  WEBHOOK_BACKOFF_BASE_MS: '200',
  WEBHOOK_BACKOFF_MAX_MS: '500',
  WEBHOOK_TIMEOUT_MS: '1000',
};

/** One POST the receiver took, as it came. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body: `{id, type, createdAt, role, data}`. */
  event: { id: string; type: string; createdAt: string; role: string; data: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- a delivery as JSON
  at: number;
}

/** How the receiver answers a POST: a status, or never (a hung endpoint). */
export type Answer = { status: number; body?: string } | 'hang';

/**
 * A real HTTP endpoint for webhooks on 127.0.0.1: it records every POST and answers what the
 * test's `answer` says for it (200 by default).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  answer: (path: string, event: Received['event'], nth: number) => Answer = () => ({ status: 200 });
  private server: Server | undefined;
  private readonly hung = new Set<ServerResponse>();
  /** Every request's span, its end unset while it is under way. */
  private readonly spans: { path: string; from: number; to?: number }[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const opened = req.url ?? '/';
      const span: { path: string; from: number; to?: number } = {
        path: opened,
        from: performance.now(),
      };
      this.spans.push(span);
      res.on('close', () => {
        span.to = performance.now();
      });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const path = req.url ?? '/';
        const event = JSON.parse(body) as Received['event'];
        this.received.push({ path, headers: req.headers, body, event, at: Date.now() });
        const nth = this.received.filter((r) => r.path === path && r.event.id === event.id).length;
        const answer = this.answer(path, event, nth);
        if (answer === 'hang') {
          this.hung.add(res);
          return;
        }
        res.writeHead(answer.status, { 'content-type': 'text/plain' });
        res.end(answer.body ?? 'ok');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
  }

  url(path: string): string {
    const { port } = this.server?.address() as AddressInfo;
    return `http://127.0.0.1:${port}${path}`;
  }

  /** The most requests to `path` that were under way at once. */
  mostAtOnce(path: string): number {
    return this.mostAtOnceAmong([path]);
  }

  /** The most requests to any of `paths` that were under way at once. */
  mostAtOnceAmong(paths: readonly string[]): number {
    const changes = this.spans
      .filter((s) => paths.includes(s.path))
      .flatMap((s) => [
        { at: s.from, by: 1 },
        { at: s.to ?? Infinity, by: -1 },
      ])
      // Ends before starts at one instant: back to back is not at once.
      .sort((a, b) => a.at - b.at || a.by - b.by);
    let open = 0;
    let most = 0;
    for (const change of changes) {
      open += change.by;
      most = Math.max(most, open);
    }
    return most;
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    for (const res of this.hung) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

/**
 * Checks `Waybill-Signature` independently of the platform's code: some `v1` is the hex
 * HMAC-SHA256 of `t + "." + body` under the secret.
 */
export function signedWith(received: Received, secret: string): boolean {
  const header = String(received.headers['waybill-signature'] ?? '');
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = parts.find(([k]) => k === 't')?.[1];
  if (!t) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${received.body}`).digest();
  return parts
    .filter(([k]) => k === 'v1')
    .some(([, v]) => {
      const given = Buffer.from(v ?? '', 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

/** How many `v1` signatures the message carries (two during a rotation). */
export const signatureCount = (received: Received): number =>
  String(received.headers['waybill-signature'] ?? '')
    .split(',')
    .filter((p) => p.trim().startsWith('v1=')).length;

/** A receiver started before the suite and stopped after it. */
export function useWebhookReceiver(): WebhookReceiver {
  const receiver = new WebhookReceiver();
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  return receiver;
}

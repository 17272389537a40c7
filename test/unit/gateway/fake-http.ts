import type { ServerResponse } from 'node:http';
import { PassThrough, Writable } from 'node:stream';
import type { GatewayRequest } from '../../../services/gateway/http';

/** A response that keeps what is written: status, headers, body. */
export class FakeResponse extends Writable {
  statusCode = 200;
  readonly headers = new Map<string, string | number | string[]>();
  readonly chunks: Buffer[] = [];
  private sent = false;

  get headersSent(): boolean {
    return this.sent;
  }

  setHeader(name: string, value: string | number | string[]): this {
    if (this.sent) throw new Error(`header ${name} set after the headers were sent`);
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string) {
    return this.headers.get(name.toLowerCase());
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    if (this.sent) throw new Error(`header ${name} removed after the headers were sent`);
    this.headers.delete(name.toLowerCase());
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.sent = true;
    this.chunks.push(Buffer.from(chunk));
    callback();
  }

  override end(...args: unknown[]): this {
    this.sent = true;
    return super.end(...(args as [])) as this;
  }

  get body(): Buffer {
    return Buffer.concat(this.chunks);
  }

  json(): unknown {
    return JSON.parse(this.body.toString('utf8'));
  }

  /** Resolves once the body has been written in full (or the response destroyed). */
  done(): Promise<void> {
    return new Promise((resolve) => {
      if (this.writableFinished || this.destroyed) resolve();
      else this.once('close', () => resolve());
    });
  }

  asServerResponse(): ServerResponse {
    return this as unknown as ServerResponse;
  }
}

export interface FakeRequestOptions {
  method?: string;
  url?: string;
  headers?: Record<string, string>;
  meta?: Record<string, unknown>;
  alias?: GatewayRequest['$alias'];
  endpoint?: GatewayRequest['$endpoint'];
  /** What `ctx.call` of the request's context does. */
  call?: (endpoint: unknown, params: unknown, opts: Record<string, unknown>) => unknown;
}

/** A request as moleculer-web hands it to the hooks: a readable body, `$ctx`, `$alias`. */
export function fakeRequest(options: FakeRequestOptions = {}): GatewayRequest {
  const req = new PassThrough() as unknown as GatewayRequest & PassThrough;
  const url = options.url ?? '/api/things';
  Object.assign(req, {
    method: options.method ?? 'GET',
    url,
    originalUrl: url,
    parsedUrl: url.split('?')[0],
    headers: { host: 'gateway.test', ...options.headers },
    $alias: options.alias,
    $endpoint: options.endpoint,
    $ctx: {
      meta: options.meta ?? {},
      requestID: 'req-1',
      call: async (endpoint: unknown, params: unknown, opts: Record<string, unknown>) =>
        options.call?.(endpoint, params, opts),
    },
  });
  return req;
}

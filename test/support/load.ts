/**
 * Steady HTTP load for the failure tests and `npm run bench:failover`: a few connections, each
 * sending one request after another, every answer recorded with when it started and how long
 * it took. A request the client gives up on (`giveUpMs`) is recorded with status 0, as is one
 * whose connection failed: a hang is a failure, not a slow success.
 */

export interface LoadTarget {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  /** A JSON body, sent as it is; a function makes one per request. */
  body?: string | (() => string);
}

export interface Sample {
  /** Milliseconds since the load started, when the request was sent. */
  at: number;
  ms: number;
  /** HTTP status; 0 when the connection failed or the client gave up. */
  status: number;
  /** The answer's body when its status is not 2xx (to tell what failed), else undefined. */
  text?: string;
}

export interface LoadOptions {
  connections: number;
  /** A request not answered within this many milliseconds is abandoned and recorded as 0. */
  giveUpMs: number;
}

export interface Load {
  /** Milliseconds since the load started. */
  elapsed(): number;
  /** Answers so far. */
  samples: Sample[];
  /** Lets the requests under way finish, sends no more, and returns every answer. */
  stop(): Promise<Sample[]>;
}

/** Sends one request of the target; throws when it fails or takes longer than `giveUpMs`. */
export async function send(
  target: LoadTarget,
  giveUpMs: number,
): Promise<{ status: number; text: string }> {
  const body = typeof target.body === 'function' ? target.body() : target.body;
  const res = await fetch(target.url, {
    method: target.method ?? (body === undefined ? 'GET' : 'POST'),
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...target.headers,
    },
    body,
    signal: AbortSignal.timeout(giveUpMs),
  });
  return { status: res.status, text: await res.text() };
}

/** Starts the load at once; `stop()` ends it. */
export function startLoad(target: LoadTarget, options: LoadOptions): Load {
  const started = Date.now();
  const elapsed = () => Date.now() - started;
  const samples: Sample[] = [];
  let stopping = false;

  const one = async (): Promise<void> => {
    const at = elapsed();
    try {
      const { status, text } = await send(target, options.giveUpMs);
      const ok = status >= 200 && status < 300;
      samples.push({ at, ms: elapsed() - at, status, text: ok ? undefined : text });
    } catch (error) {
      samples.push({ at, ms: elapsed() - at, status: 0, text: String(error) });
    }
  };
  const connection = async () => {
    while (!stopping) await one();
  };
  const running = Promise.all(Array.from({ length: options.connections }, connection));
  return {
    elapsed,
    samples,
    async stop() {
      stopping = true;
      await running;
      return samples;
    },
  };
}

/** The p-th percentile (0-100) of durations, by nearest rank; 0 for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** Samples sent in [from, to) milliseconds. */
export const sentBetween = (samples: Sample[], from: number, to: number) =>
  samples.filter((s) => s.at >= from && s.at < to);

/** Samples that did not answer 2xx. */
export const failures = (samples: Sample[]) =>
  samples.filter((s) => s.status < 200 || s.status >= 300);

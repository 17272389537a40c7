import {
  Errors,
  type BrokerOptions,
  type Context,
  type Middleware,
  type ServiceBroker,
} from 'moleculer';
import { toHttpError } from './errors';

/**
 * How every broker copes with lost nodes and failing ones (docs/resilience.md). Each piece is
 * a moleculer option; moleculer.config.ts puts them together.
 */

interface ErrorLike {
  type?: unknown;
  nodeID?: unknown;
}

/**
 * moleculer's errors for a call whose action never started: no node runs it, the node it
 * reached was stopping, or the action's queue was full.
 */
const NEVER_STARTED_TYPES = ['SERVICE_NOT_FOUND', 'SERVICE_NOT_AVAILABLE', 'QUEUE_FULL'];

/**
 * Failures of the way to a node rather than of the node's work: the action never started
 * (above), the node was lost with the call (`REQUEST_REJECTED`, raised when the registry drops
 * a node or our transporter drops the connection), or this node's transporter is down
 * (`BAD_GATEWAY`, moleculer's BrokerDisconnectedError).
 */
const LOST_CALL_TYPES = new Set([...NEVER_STARTED_TYPES, 'REQUEST_REJECTED', 'BAD_GATEWAY']);

/**
 * Whether moleculer says that a call of `action` never started. About another action (one
 * the service called in turn) it proves nothing of the first.
 */
export function neverStarted(err: unknown, action: string): boolean {
  const { type, data } = (err ?? {}) as { type?: unknown; data?: { action?: unknown } };
  return typeof type === 'string' && NEVER_STARTED_TYPES.includes(type) && data?.action === action;
}

/**
 * Whether a failed call may be sent again (if its action's retry kind allows): the call was
 * lost on its way, as raised on this node. An error that carries a `nodeID` came back from
 * another node, whose own calls already had their retries; a timeout has used up the time.
 */
export function isLostCall(err: unknown): boolean {
  const e = (err ?? {}) as ErrorLike;
  return !e.nodeID && typeof e.type === 'string' && LOST_CALL_TYPES.has(e.type);
}

/**
 * Whether a failure counts against the node that should have answered, for the circuit
 * breaker of a caller on `ownNodeID`: that node answered a server error, or did not answer
 * in time. Lost calls do not count: the registry already stops routing to a lost node, and a
 * transporter outage is no node's fault. Nor do refusals for load (a 503 with `Retry-After`):
 * they are the node protecting itself. Nor does a node's failure to serve itself: closing
 * its own circuit only made it refuse its callers while its dependency recovered.
 */
export function isNodeFailure(err: unknown, ownNodeID: string): boolean {
  const e = (err ?? {}) as ErrorLike & { data?: { nodeID?: unknown } };
  if (typeof e.type === 'string' && LOST_CALL_TYPES.has(e.type)) return false;
  // An answer carries the node it came from; a timeout, in its data, the node it waited for.
  const from = e.nodeID ?? (e.type === 'REQUEST_TIMEOUT' ? e.data?.nodeID : undefined);
  if (typeof from !== 'string' || from === ownNodeID) return false;
  const { status, internal } = toHttpError(err);
  return status >= 500 && internal;
}

/**
 * Retries: enabled, but none unless the call asks (`retries` per call, from the action's
 * retry kind: `libs/contracts/retry`). Three retries wait 0.1, 0.2 and 0.4 s.
 */
export const RETRY_POLICY: NonNullable<BrokerOptions['retryPolicy']> = {
  enabled: true,
  retries: 0,
  delay: 100,
  maxDelay: 1_000,
  factor: 2,
  check: (err) => isLostCall(err),
};

/**
 * Per remote node and action, on the caller: half of at least 10 calls failing within a 10 s
 * window opens it (the balancer skips that node) for 5 s; then one call tries it again.
 */
export function circuitBreaker(ownNodeID: string): NonNullable<BrokerOptions['circuitBreaker']> {
  return {
    enabled: true,
    threshold: 0.5,
    minRequestCount: 10,
    windowTime: 10,
    halfOpenTime: 5_000,
    check: (err) => isNodeFailure(err, ownNodeID),
  };
}

/**
 * Every node announces itself each second and is dropped from the registry, its calls in
 * flight rejected (then retried elsewhere when their kind allows), after 3 s of silence.
 * moleculer checks every `heartbeatTimeout` seconds, so a crashed node is noticed in 3-7 s,
 * instead of 30-60 s with the defaults. A graceful stop announces itself and is immediate.
 */
export const HEARTBEAT = { heartbeatInterval: 1, heartbeatTimeout: 3 } as const;

/**
 * Stops the broker and exits: 0 once it has stopped, 1 if it has not within `graceMs`
 * (`STOP_GRACE_MS`); whatever still runs then (a request, a connection that will not close) is
 * abandoned. moleculer's own wait for running contexts is set longer (moleculer.config.ts), so
 * that it never gives up first and lets the process exit 0 with work abandoned.
 */
export async function stopAndExit(
  broker: Pick<ServiceBroker, 'stop' | 'logger'>,
  exit: (code: number) => void,
  graceMs: number,
): Promise<void> {
  const overdue = setTimeout(() => {
    broker.logger.error(`not stopped within ${graceMs} ms; exiting with work unfinished`);
    exit(1);
  }, graceMs);
  await broker.stop();
  clearTimeout(overdue);
  exit(0);
}

/** Work a service hands back as its process begins to stop (`whenStopping`). */
export type StoppingHandler = () => void | Promise<void>;

const stoppingHandlers = new WeakMap<ServiceBroker, StoppingHandler[]>();

/**
 * Runs `handler` as `broker` begins to stop, before moleculer waits for the requests in
 * progress: for requests that last until the server ends them (a tracking page's event
 * stream), which that wait would otherwise wait for until it gave up. moleculer has no such
 * handler for a service (its `stopped` comes after the wait); `stoppingHooks` runs these.
 */
export function whenStopping(broker: ServiceBroker, handler: StoppingHandler): void {
  const handlers = stoppingHandlers.get(broker) ?? [];
  handlers.push(handler);
  stoppingHandlers.set(broker, handlers);
}

/**
 * Runs the `whenStopping` handlers in the broker's `stopping` phase. moleculer calls the
 * middlewares' `stopping` hooks last registered first: register this one last, so that it runs
 * before the context tracker's, which waits for the calls in flight.
 */
export const stoppingHooks: Middleware = {
  name: 'StoppingHooks',
  async stopping(broker: ServiceBroker) {
    await Promise.all(
      (stoppingHandlers.get(broker) ?? []).map(async (handler) => {
        try {
          await handler();
        } catch (err) {
          // The stop goes on; what the handler left is dealt with by the service's `stopped`.
          broker.logger.warn('a stopping handler failed', { error: (err as Error).message });
        }
      }),
    );
  },
};

const DEADLINE = Symbol('call deadline');

/**
 * Remote calls fail at once while this node's NATS connection is down, and never outlive
 * their timeout, retries included:
 *
 * - moleculer would try to publish each one, log an error for each attempt and keep a retried
 *   attempt among the transit's pending requests; here it is refused before that, as
 *   moleculer's BrokerDisconnectedError;
 * - moleculer's Timeout middleware rejects the caller's promise at the timeout but leaves the
 *   call tracked by the ContextTracker, inside it, until an answer that a lost node or a
 *   dropped connection never sends: a stop then waited for those contexts in vain (issue 10,
 *   item 11). Here the call is settled, and so released, at its deadline;
 * - moleculer gives each retry a whole timeout again; here a retry has what is left.
 *
 * A user middleware is the innermost, so this one runs inside the tracker, next to the transit.
 */
export const remoteCalls: Middleware = {
  name: 'RemoteCalls',
  remoteAction(handler) {
    const transit = () => this.transit;
    // moleculer calls the wrapped handler without a `this`; its type asks for a Service.
    const next = handler as (ctx: Context) => Promise<unknown>;
    return (ctx: Context) => {
      if (transit()?.tx.connected === false) {
        // Its constructor takes no argument; its declared type inherits the parent's.
        return Promise.reject(new Errors.BrokerDisconnectedError(''));
      }
      const timeout = ctx.options.timeout ?? 0;
      if (timeout <= 0) return next(ctx);
      // A retry is a copy of the first context, sharing its locals: one deadline for all.
      const locals = ctx.locals as Record<symbol, number>;
      locals[DEADLINE] ??= Date.now() + timeout;
      const remaining = locals[DEADLINE] - Date.now();
      const expired = () =>
        new Errors.RequestTimeoutError({ action: ctx.action?.name ?? '', nodeID: ctx.nodeID });
      if (remaining <= 0) return Promise.reject(expired());
      return new Promise((resolve, reject) => {
        const release = () => {
          clearTimeout(timer);
          // Gone already when an answer came; not when the request could not even be sent.
          transit()?.removePendingRequest(ctx.id);
        };
        const timer = setTimeout(() => {
          release();
          reject(expired());
        }, remaining);
        next(ctx).then(
          (answer) => {
            clearTimeout(timer);
            resolve(answer);
          },
          (err: unknown) => {
            release();
            reject(err);
          },
        );
      });
    };
  },
};

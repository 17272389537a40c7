import * as moleculer from 'moleculer';
import type { Middleware, ServiceBroker } from 'moleculer';

// moleculer exports its built-in middlewares by name; its types leave them out.
const BUILT_IN = (moleculer as unknown as { Middlewares: Record<string, unknown> }).Middlewares;

/**
 * Where a request enters a process, not a call between services: moleculer-web's `rest`
 * action, which carries each HTTP request into the gateway. The broker's call pipeline is for
 * calls and does nothing right for it: it has no params to validate, no timeout (moleculer-web
 * sets 0), cannot be retried once its body is read, must not open a circuit breaker on the
 * gateway's own HTTP layer, has its errors answered by the gateway and is counted by the HTTP
 * metrics. It still passes the context tracker, so that a stop waits for requests in
 * progress, and tracing. Skipping the rest took 1.5–3.5 µs off every request (decision 83).
 */
export const ENTRY_POINT = { entryPoint: true } as const;

const isEntryPoint = (action: unknown) =>
  (action as { entryPoint?: unknown } | undefined)?.entryPoint === true;

/** What moleculer takes in `middlewares`: a built-in's name, hooks, or a function of the broker. */
type MiddlewareEntry = string | Middleware | ((broker: ServiceBroker) => Middleware | null);

/**
 * The built-in middlewares entry points keep: the tracker of running contexts, and tracing,
 * whose span of an entry point is the request's root (it wraps nothing while tracing is off).
 */
export const KEPT_BY_ENTRY_POINTS: readonly string[] = ['ContextTracker', 'Tracing'];

/**
 * `entry` with its `localAction` hook leaving entry points unwrapped: the hook is applied once
 * per action as a service is created, so an entry point's requests pay nothing for it.
 */
export function exceptEntryPoints(entry: MiddlewareEntry): MiddlewareEntry {
  return function (this: ServiceBroker, broker: ServiceBroker) {
    const resolved = typeof entry === 'string' ? BUILT_IN[entry] : entry;
    if (!resolved) throw new Error(`no built-in middleware named ${String(entry)}`);
    const hooks =
      typeof resolved === 'function'
        ? (resolved as (b: ServiceBroker) => Middleware | null).call(broker, broker)
        : (resolved as Middleware);
    const wrap = hooks?.localAction;
    if (!hooks || !wrap) return hooks as Middleware;
    return {
      ...hooks,
      localAction(this: ServiceBroker, next, action) {
        return isEntryPoint(action) ? next : wrap.call(this, next, action);
      },
    };
  };
}

/** A broker's `middlewares`, each but those entry points keep leaving entry points unwrapped. */
export function forCalls(entries: (Middleware | string)[]): (Middleware | string)[] {
  return entries.map((entry) =>
    typeof entry === 'string' && KEPT_BY_ENTRY_POINTS.includes(entry)
      ? entry
      : // A function of the broker, which moleculer takes and the option's type leaves out.
        (exceptEntryPoints(entry) as unknown as Middleware),
  );
}

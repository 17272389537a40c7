import type { CallingOptions } from 'moleculer';
import type { ActionName, Actions, EventName, Events } from './index';
import { CONTRACT_RETRY, retriesFor } from './retry';

/** Anything that can call an action: a moleculer `Context` or the `ServiceBroker`. */
export interface Caller {
  call(actionName: string, params?: unknown, opts?: CallingOptions): Promise<unknown>;
  /** A `Context`'s meta: whether the call carries an idempotency token (`keyed` actions). */
  meta?: { idempotencyToken?: unknown };
}

/** Anything that can broadcast an event: a moleculer `Context` or the `ServiceBroker`. */
export interface Broadcaster {
  broadcast(eventName: string, payload?: unknown): Promise<unknown> | unknown;
}

/** Anything that can emit an event to one node of each listening service. */
export interface Emitter {
  emit(eventName: string, payload?: unknown): Promise<unknown> | unknown;
}

export type ParamsOf<N extends ActionName> = Actions[N]['params'];
export type AnswerOf<N extends ActionName> = Actions[N]['answer'];

/**
 * Calls another service's action by its contract: the action name, its params and its answer
 * are checked at compile time against `libs/contracts`, so a caller cannot drift from the
 * callee's schema without the type-check failing. A call lost with its node is repeated on
 * another as often as the contract's retry kind allows.
 */
export function call<N extends ActionName>(
  caller: Caller,
  actionName: N,
  params: ParamsOf<N>,
  opts?: CallingOptions,
): Promise<AnswerOf<N>> {
  const retries = retriesFor(CONTRACT_RETRY[actionName], caller.meta);
  return caller.call(actionName, params, { retries, ...opts }) as Promise<AnswerOf<N>>;
}

/** Broadcasts a contract event with its declared payload. */
export async function broadcast<E extends EventName>(
  broadcaster: Broadcaster,
  eventName: E,
  payload: Events[E],
): Promise<void> {
  await broadcaster.broadcast(eventName, payload);
}

/**
 * Sends an event by its contract to one node of each service listening to it (moleculer's
 * balanced events): for work that one replica should do, not each.
 */
export async function emit<E extends EventName>(
  emitter: Emitter,
  eventName: E,
  payload: Events[E],
): Promise<void> {
  await emitter.emit(eventName, payload);
}

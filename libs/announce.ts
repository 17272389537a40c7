import { broadcast, type EventName, type Events } from './contracts';
import type { WaybillContext } from './service';

/**
 * Once an operator's change is stored, this replica rereads what it keeps in memory (`reload`)
 * and tells the others (`event`). The change stands whatever happens here, so a failure is
 * logged and the answer is still the change's: a 500 would have the operator retry what is
 * stored (and be told it exists). Every replica catches up at its periodic reload.
 */
export async function announceStored<E extends EventName>(
  ctx: WaybillContext<unknown>,
  event: E,
  payload: Events[E],
  reload?: () => Promise<unknown>,
): Promise<void> {
  await reload?.().catch((err: unknown) => {
    ctx.service?.logger.warn(`${event}: changed, but this replica could not reread it`, err);
  });
  await broadcast(ctx, event, payload).catch((err: unknown) => {
    ctx.service?.logger.warn(`${event}: changed, but the other replicas were not told`, err);
  });
}

import { broadcast } from '../../libs/contracts';
import type { PricingEvents } from '../../libs/contracts/pricing';
import type { WaybillContext } from '../../libs/service';

/**
 * Once an operator's change is stored, this replica rereads what it keeps in memory and tells
 * the others (`event`). The change stands whatever happens here, so a failure is logged and the
 * answer is still the change's: a 500 would have the operator retry what is stored. Every
 * replica catches up at its periodic reload.
 */
export async function announceStored(
  ctx: WaybillContext<unknown>,
  event: keyof PricingEvents,
  reload: () => Promise<unknown>,
): Promise<void> {
  await reload().catch((err: unknown) => {
    ctx.service?.logger.warn(`${event}: changed, but this replica could not reread it`, err);
  });
  await broadcast(ctx, event, {}).catch((err: unknown) => {
    ctx.service?.logger.warn(`${event}: changed, but the other replicas were not told`, err);
  });
}

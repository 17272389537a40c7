import { notFound } from '../errors';
import { call, type Caller } from './call';
import { COURIER_NOT_FOUND, type CourierView } from './matching';

/**
 * The courier a request or a quote names (`courierId`, a pay-on-delivery's
 * `podCourierProfileId`): an active courier of the directory, else the 404 naming `field`. A
 * virtual courier (the sandbox's, whose id its delivery shows) is nobody's to name: offered
 * another delivery it would never answer, and a wallet of its would credit nobody.
 */
export async function nameableCourier(
  caller: Caller,
  courierId: string,
  field: string,
): Promise<CourierView> {
  const courier = await call(caller, 'courier-matching.getCourier', { courierId });
  if (!isNameable(courier)) {
    const error = notFound(COURIER_NOT_FOUND);
    error.data = { errors: [{ field, message: `no active courier ${courierId}` }] };
    throw error;
  }
  return courier;
}

/** Whether a request may name the courier: an active one, not the sandbox's virtual one. */
export const isNameable = (courier: CourierView | null | undefined): courier is CourierView =>
  Boolean(courier?.active && !courier.virtual);

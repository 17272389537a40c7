import { virtualCourierId, type StartSearchParams } from '../../libs/contracts/matching';
import type { NewCourierRecord } from './store';

/**
 * The sandbox's virtual courier of a simulated delivery: a directory entry of its own (so the
 * merchant sees a courier view like any other), of the fleet type the delivery was priced for.
 */
export function virtualCourier(search: StartSearchParams): NewCourierRecord {
  const code = search.deliveryId.slice(0, 8).toUpperCase();
  return {
    _id: virtualCourierId(search.deliveryId),
    name: 'Simulated courier',
    // A number no one holds (Nigeria's +234 0…): nothing is ever sent to it.
    phone: '+2340000000000',
    profilePhoto: null,
    fleet: {
      typeId: search.fleetTypeId,
      regNo: `SIM-${code}`,
      make: 'Waybill',
      model: 'Simulator',
      colour: 'Grey',
    },
    active: true,
    virtual: true,
  };
}

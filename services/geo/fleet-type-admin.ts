import Joi from '../../libs/joi';
import { announceStored } from '../../libs/announce';
import {
  FLEET_TYPES_CHANGED_EVENT,
  FLEET_TYPE_NOT_FOUND,
  FLEET_TYPES_MAX,
  listFleetTypesParams,
  type ListFleetTypesParams,
} from '../../libs/contracts/geo';
import { conflict, notFound } from '../../libs/errors';
import { kgToGrams } from '../../libs/money';
import { isDuplicateKey } from '../../libs/mongo';
import {
  action,
  implement,
  type ServiceActions,
  type WaybillContext,
  type WithDefaults,
} from '../../libs/service';
import { createFleetTypeParams, fleetTypeDetail, updateFleetTypeParams } from './schemas';
import type { FleetTypeStore } from './store';
import { toFleetTypeDetail } from './views';

/**
 * The operators' fleet type actions. Each change is announced (`geo.fleetTypesChanged`) once
 * stored, so that other geo replicas and pricing drop the fleet types they keep in memory; an
 * announcement that fails is logged, and the answer is still the stored change's.
 */
export function createFleetTypeActions(fleetTypes: FleetTypeStore): ServiceActions {
  const announce = (ctx: WaybillContext<unknown>, fleetTypeId: string) =>
    announceStored(ctx, FLEET_TYPES_CHANGED_EVENT, { fleetTypeId });

  return {
    /**
     * Also called by pricing and matching, with `activeOnly: false`, to fill their own caches
     * when theirs expire or a change is announced: read from the database, since the replica
     * that answers may not have heard of that change yet, and what it answers is then kept for
     * the caches' lifetime (30 s in pricing, 60 s in matching). A failed read fails the call.
     */
    listFleetTypes: implement('geo.listFleetTypes', {
      http: {
        group: 'admin',
        method: 'GET',
        path: '/fleet-types',
        message: 'Fleet types retrieved',
        summary: 'List fleet types with capacity and speed, inactive ones included',
        response: Joi.array().items(fleetTypeDetail),
      },
      params: listFleetTypesParams,
      async handler(ctx: WaybillContext<WithDefaults<ListFleetTypesParams, 'activeOnly'>>) {
        return (await fleetTypes.list(ctx.params.activeOnly, 'stored')).map(toFleetTypeDetail);
      },
    }),

    createFleetType: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'POST',
        path: '/fleet-types',
        status: 201,
        creates: 'fleetTypeId',
        message: 'Fleet type created',
        summary: 'Add a fleet type',
        response: fleetTypeDetail,
        errors: {
          409: `A fleet type with this code exists, or ${FLEET_TYPES_MAX} fleet types exist already`,
        },
      },
      params: createFleetTypeParams,
      async handler(ctx) {
        const { maxWeightKg, ...fields } = ctx.params;
        // Counted before the insert: operators adding types at the same moment may pass the
        // cap by their own number, which the lists' margin holds (docs/geo-data.md).
        if ((await fleetTypes.list(false, 'stored')).length >= FLEET_TYPES_MAX) {
          throw conflict(
            `At most ${FLEET_TYPES_MAX} fleet types may exist, inactive ones included (deliveries refer to them), and there are that many: none can be added`,
          );
        }
        try {
          const record = await fleetTypes.create({
            ...fields,
            maxWeightGrams: kgToGrams(maxWeightKg),
          });
          await announce(ctx, record._id);
          return toFleetTypeDetail(record);
        } catch (err) {
          if (isDuplicateKey(err)) {
            throw conflict(`A fleet type with code ${fields.code} already exists`);
          }
          throw err;
        }
      },
    }),

    updateFleetType: action({
      retry: 'never',
      http: {
        group: 'admin',
        method: 'PATCH',
        path: '/fleet-types/:fleetTypeId',
        message: 'Fleet type updated',
        summary: 'Edit or deactivate a fleet type',
        description:
          'Send only the fields to change. Fleet types are never deleted, since deliveries refer to them; set `active: false` to hide one.',
        response: fleetTypeDetail,
        errors: {
          404: FLEET_TYPE_NOT_FOUND,
          409: 'Another change of the fleet type held it for 5 s (send this one again)',
        },
      },
      params: updateFleetTypeParams,
      async handler(ctx) {
        const { fleetTypeId, maxWeightKg, ...fields } = ctx.params;
        const changes =
          maxWeightKg === undefined
            ? fields
            : { ...fields, maxWeightGrams: kgToGrams(maxWeightKg) };
        const record = await fleetTypes.edits.holding(
          fleetTypeId,
          () => fleetTypes.update(fleetTypeId, changes),
          ctx.service?.logger,
        );
        if (!record) throw notFound(FLEET_TYPE_NOT_FOUND);
        await announce(ctx, fleetTypeId);
        return toFleetTypeDetail(record);
      },
    }),
  };
}

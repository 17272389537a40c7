import { randomUUID } from 'node:crypto';
import Joi from 'joi';
import type { Config } from '../../libs/config';
import { conflict, notFound } from '../../libs/errors';
import { kgToGrams } from '../../libs/money';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import { uuid } from '../../libs/schemas';
import { action, type ServiceDefinition } from '../../libs/service';
import { DEFAULT_FLEET_TYPES, byCapacity, toFleetTypeDetail, toFleetTypeItem } from './fleet-types';
import { defineGeoModels, type GeoModels } from './models';

const fleetTypeItem = Joi.object({
  id: Joi.string().uuid(),
  name: Joi.string(),
  icon: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
});

const fleetTypeDetail = fleetTypeItem.keys({
  code: Joi.string(),
  maxWeight: Joi.string().description('kg, five decimals'),
  averageSpeedKmh: Joi.number(),
  active: Joi.boolean(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
});

const fleetTypeFields = {
  name: Joi.string().trim().min(1).max(60),
  icon: Joi.string()
    .uri({ scheme: ['https'] })
    .max(2048)
    .allow(null),
  description: Joi.string().trim().max(280).allow(null),
  maxWeightKg: Joi.number().positive().max(100_000),
  averageSpeedKmh: Joi.number().positive().max(200),
  active: Joi.boolean(),
};

/** Inserts the default fleet types that are missing; never touches existing ones. */
async function ensureDefaultFleetTypes(models: GeoModels): Promise<void> {
  for (const seed of DEFAULT_FLEET_TYPES) {
    try {
      await models.FleetType.updateOne(
        { code: seed.code },
        { $setOnInsert: { _id: randomUUID(), ...seed, icon: null, active: true } },
        { upsert: true },
      );
    } catch (err) {
      // Another replica inserted it at the same moment.
      if (!isDuplicateKey(err)) throw err;
    }
  }
}

export function createGeoService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'geo', defineGeoModels);

  async function loadFleetTypes(activeOnly: boolean) {
    const records = await db.models.FleetType.find(activeOnly ? { active: true } : {}).lean();
    return records.sort(byCapacity);
  }

  async function findFleetType(fleetTypeId: string) {
    const record = await db.models.FleetType.findById(fleetTypeId).lean();
    if (!record) throw notFound('Fleet type not found');
    return record;
  }

  return {
    name: 'geo',
    mixins: [db.mixin()],
    async started() {
      await ensureDefaultFleetTypes(await db.connect());
    },
    actions: {
      fleetTypes: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/fleet-types',
          message: 'Fleet types retrieved',
          summary: 'List the active fleet types',
          response: Joi.array().items(fleetTypeItem),
        },
        params: Joi.object({}),
        async handler() {
          return (await loadFleetTypes(true)).map(toFleetTypeItem);
        },
      }),

      /** Internal: one fleet type, active or not; 404 `Fleet type not found`. */
      getFleetType: action({
        visibility: 'public',
        params: Joi.object({ fleetTypeId: uuid().required() }),
        async handler(ctx) {
          return toFleetTypeDetail(await findFleetType(ctx.params.fleetTypeId));
        },
      }),

      /** Also called by pricing and routing, with `activeOnly: true`. */
      listFleetTypes: action({
        http: {
          group: 'admin',
          method: 'GET',
          path: '/fleet-types',
          message: 'Fleet types retrieved',
          summary: 'List fleet types with capacity and speed, inactive ones included',
          response: Joi.array().items(fleetTypeDetail),
        },
        params: Joi.object({ activeOnly: Joi.boolean().default(false) }),
        async handler(ctx) {
          return (await loadFleetTypes(ctx.params.activeOnly)).map(toFleetTypeDetail);
        },
      }),

      createFleetType: action({
        http: {
          group: 'admin',
          method: 'POST',
          path: '/fleet-types',
          status: 201,
          message: 'Fleet type created',
          summary: 'Add a fleet type',
          response: fleetTypeDetail,
          errors: { 409: 'A fleet type with this code exists' },
        },
        params: Joi.object({
          code: Joi.string()
            .trim()
            .lowercase()
            .pattern(/^[a-z][a-z0-9-]{1,31}$/)
            .required(),
          name: fleetTypeFields.name.required(),
          icon: fleetTypeFields.icon.default(null),
          description: fleetTypeFields.description.default(null),
          maxWeightKg: fleetTypeFields.maxWeightKg.required(),
          averageSpeedKmh: fleetTypeFields.averageSpeedKmh.required(),
          active: fleetTypeFields.active.default(true),
        }),
        async handler(ctx) {
          const { maxWeightKg, ...fields } = ctx.params;
          try {
            const record = await db.models.FleetType.create({
              ...fields,
              maxWeightGrams: kgToGrams(maxWeightKg),
            });
            return toFleetTypeDetail(record.toObject());
          } catch (err) {
            if (isDuplicateKey(err)) {
              throw conflict(`A fleet type with code ${fields.code} already exists`);
            }
            throw err;
          }
        },
      }),

      updateFleetType: action({
        http: {
          group: 'admin',
          method: 'PATCH',
          path: '/fleet-types/:fleetTypeId',
          message: 'Fleet type updated',
          summary: 'Edit or deactivate a fleet type',
          description:
            'Send only the fields to change. Fleet types are never deleted, since deliveries refer to them; set `active: false` to hide one.',
          response: fleetTypeDetail,
        },
        params: Joi.object({
          fleetTypeId: uuid().required(),
          ...fleetTypeFields,
        }).or(...Object.keys(fleetTypeFields)),
        async handler(ctx) {
          const { fleetTypeId, maxWeightKg, ...fields } = ctx.params;
          const update =
            maxWeightKg === undefined
              ? fields
              : { ...fields, maxWeightGrams: kgToGrams(maxWeightKg) };
          const record = await db.models.FleetType.findOneAndUpdate(
            { _id: fleetTypeId },
            { $set: update },
            { new: true },
          ).lean();
          if (!record) throw notFound('Fleet type not found');
          return toFleetTypeDetail(record);
        },
      }),
    },
  };
}

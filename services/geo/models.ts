import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';

const fleetTypeSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    code: { type: String, required: true, unique: true },
    name: { type: String, required: true },
    icon: { type: String, default: null },
    description: { type: String, default: null },
    maxWeightGrams: { type: Number, required: true },
    averageSpeedKmh: { type: Number, required: true },
    active: { type: Boolean, required: true, default: true },
  },
  { timestamps: true, versionKey: false },
);

export type FleetTypeRecord = InferSchemaType<typeof fleetTypeSchema> & {
  createdAt: Date;
  updatedAt: Date;
};

export function defineGeoModels(connection: Connection) {
  return {
    FleetType: connection.model('FleetType', fleetTypeSchema, 'fleet_types'),
  };
}

export type GeoModels = ReturnType<typeof defineGeoModels>;

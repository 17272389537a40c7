import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';

const packageSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    userId: { type: String, required: true },
    packageType: { type: String, required: true },
    name: { type: String, required: true },
    image: { type: String, default: null },
    description: { type: String, default: null },
    quantity: { type: Number, required: true },
    size: { type: String, required: true, enum: ['SMALL', 'MEDIUM', 'LARGE'] },
    valueKobo: { type: Number, required: true },
    /** The delivery that took this package; set once, atomically, by `package.assign`. */
    p2pDeliveryId: { type: String, default: null },
    deletedAt: { type: Date, default: null },
  },
  { timestamps: true, versionKey: false },
);
packageSchema.index({ userId: 1, deletedAt: 1, p2pDeliveryId: 1 });
packageSchema.index({ p2pDeliveryId: 1 });

export type PackageRecord = InferSchemaType<typeof packageSchema> & {
  createdAt: Date;
  updatedAt: Date;
};

export function definePackageModels(connection: Connection) {
  return { Package: connection.model('Package', packageSchema, 'packages') };
}

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

/**
 * Who holds a package: a delivery id, or DELETED. The package id is the claim's `_id`, so
 * the first insert wins and every other one fails with a duplicate key. This is the lock:
 * FerretDB does not make a conditional update atomic, a unique `_id` it does enforce.
 */
const claimSchema = new Schema(
  {
    _id: { type: String, required: true },
    holder: { type: String, required: true },
    userId: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false },
);
claimSchema.index({ holder: 1 });

export const DELETED = 'deleted';

export type PackageRecord = InferSchemaType<typeof packageSchema> & {
  createdAt: Date;
  updatedAt: Date;
};

export function definePackageModels(connection: Connection) {
  return {
    Package: connection.model('Package', packageSchema, 'packages'),
    Claim: connection.model('PackageClaim', claimSchema, 'package_claims'),
  };
}

import { randomUUID } from 'node:crypto';
import { PACKAGE_SIZES } from '../../libs/contracts/package';
import { Schema, type Connection, type InferSchemaType } from 'mongoose';
import { isDuplicateKey } from '../../libs/mongo';

const packageSchema = new Schema(
  {
    _id: { type: String, default: () => randomUUID() },
    userId: { type: String, required: true },
    packageType: { type: String, required: true },
    name: { type: String, required: true },
    image: { type: String, default: null },
    description: { type: String, default: null },
    quantity: { type: Number, required: true },
    size: { type: String, required: true, enum: PACKAGE_SIZES },
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

export type PackageModels = ReturnType<typeof definePackageModels>;

/** Not deleted, not taken by a delivery: what a user may still edit, delete or select. */
const open = (userId: string) => ({ userId, deletedAt: null, p2pDeliveryId: null });

/**
 * The package service's persistence: every query its actions make. Writes name one `_id`
 * each: FerretDB pushes only `_id` equality down to SQLite, and any other filter makes a
 * write scan the whole collection while it holds the database's write lock.
 */
export class PackageStore {
  constructor(private readonly models: () => PackageModels) {}

  private get Package() {
    return this.models().Package;
  }

  private get Claim() {
    return this.models().Claim;
  }

  /**
   * Takes the package for `holder` by inserting its claim. Returns 'taken', 'already' when the
   * holder has it, or the other holder's name when someone else does.
   */
  async claim(packageId: string, userId: string, holder: string) {
    try {
      await this.Claim.create({ _id: packageId, holder, userId });
      return 'taken' as const;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const current = await this.Claim.findById(packageId).lean();
      return current?.holder === holder ? ('already' as const) : (current?.holder ?? DELETED);
    }
  }

  async isClaimed(packageId: string): Promise<boolean> {
    return Boolean(await this.Claim.exists({ _id: packageId }));
  }

  /** Gives back the claims `holder` has on these packages. */
  async dropClaims(packageIds: string[], holder: string): Promise<void> {
    await Promise.all(packageIds.map((_id) => this.Claim.deleteOne({ _id, holder })));
  }

  async claimedBy(holder: string): Promise<string[]> {
    return (await this.Claim.find({ holder }).lean()).map((c) => c._id);
  }

  /** A user's package that is not deleted (it may be taken by a delivery). */
  findLive(userId: string, packageId: string) {
    return this.Package.findOne({ _id: packageId, userId, deletedAt: null }).lean();
  }

  async isLive(userId: string, packageId: string): Promise<boolean> {
    return Boolean(await this.Package.exists({ _id: packageId, userId, deletedAt: null }));
  }

  findOwn(userId: string, packageId: string) {
    return this.Package.findOne({ _id: packageId, userId }).lean();
  }

  countOpen(userId: string) {
    return this.Package.countDocuments(open(userId));
  }

  /** Newest first. */
  listOpen(userId: string) {
    return this.Package.find(open(userId)).sort({ createdAt: -1 }).lean();
  }

  findOpen(userId: string, packageIds: string[]) {
    return this.Package.find({ _id: { $in: packageIds }, ...open(userId) }).lean();
  }

  /** Throws a duplicate-key error when `_id` is given and taken. */
  async insert(fields: object): Promise<PackageRecord> {
    return (await this.Package.create(fields)).toObject() as PackageRecord;
  }

  /** Null when the package is not the user's, deleted or taken. */
  updateOpen(userId: string, packageId: string, changes: object) {
    return this.Package.findOneAndUpdate(
      { _id: packageId, ...open(userId) },
      { $set: changes },
      { new: true },
    ).lean();
  }

  async markDeleted(packageId: string): Promise<void> {
    await this.Package.updateOne({ _id: packageId }, { $set: { deletedAt: new Date() } });
  }

  async markTaken(packageIds: string[], deliveryId: string): Promise<void> {
    await Promise.all(
      packageIds.map((_id) =>
        this.Package.updateOne({ _id }, { $set: { p2pDeliveryId: deliveryId } }),
      ),
    );
  }

  /** The packages a delivery holds, by id: what it took, as it was taken. */
  async findHeld(deliveryId: string, packageIds: string[]): Promise<Map<string, PackageRecord>> {
    const found = await Promise.all(
      packageIds.map((_id) => this.Package.findOne({ _id, p2pDeliveryId: deliveryId }).lean()),
    );
    return new Map(found.filter((p) => p !== null).map((p) => [p._id, p as PackageRecord]));
  }

  async markReturned(packageIds: string[], deliveryId: string): Promise<void> {
    await Promise.all(
      packageIds.map((_id) =>
        this.Package.updateOne(
          { _id, p2pDeliveryId: deliveryId },
          { $set: { p2pDeliveryId: null } },
        ),
      ),
    );
  }
}

import Joi from 'joi';
import type { Config } from '../../libs/config';
import { badRequest, notFound, unauthorized, type FieldError } from '../../libs/errors';
import { formatKg, formatNaira, nairaToKobo } from '../../libs/money';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import { nameBasedId } from '../../libs/ids';
import { plainText, uuid } from '../../libs/schemas';
import { action, type ServiceDefinition, type WaybillContext } from '../../libs/service';
import { DELETED, definePackageModels } from './models';
import { PACKAGE_SIZES, packageWeightGrams, toPackageView, type PackageSize } from './sizes';

export const INVALID_SELECTION = 'Invalid packages selection';

/**
 * Longest texts of a package, in UTF-16 units as joi counts them. Our own file URLs are about
 * 100 characters. With PACKAGE_MAX_OPEN they bound the size of `GET /api/packages`.
 */
export const PACKAGE_TEXT_LIMITS = { packageType: 60, name: 120, description: 128, image: 512 };

const packageView = Joi.object({
  id: Joi.string().uuid(),
  userId: Joi.string().uuid(),
  p2pDeliveryId: Joi.string().uuid().allow(null),
  errandDeliveryId: Joi.string().uuid().allow(null),
  errandStoreId: Joi.string().uuid().allow(null),
  productId: Joi.string().uuid().allow(null),
  variantCombinationId: Joi.string().uuid().allow(null),
  packageType: Joi.string(),
  name: Joi.string(),
  image: Joi.string().uri().allow(null),
  description: Joi.string().allow(null),
  quantity: Joi.number().integer(),
  weight: Joi.string().description('kg, five decimals: size weight × quantity'),
  value: Joi.string().description('NGN, two decimals: total value'),
  size: Joi.string().valid(...PACKAGE_SIZES),
  type: Joi.string().valid('PACKAGE_ITEM'),
  selectedOptions: Joi.array(),
  createdAt: Joi.string().isoDate(),
  updatedAt: Joi.string().isoDate(),
  deletedAt: Joi.string().isoDate().allow(null),
});

const packageIds = () => Joi.array().items(uuid()).min(1).max(50).unique().required();

function requireUser(ctx: WaybillContext<unknown>): string {
  const id = ctx.meta.user?.id;
  if (!id) throw unauthorized('API key is required');
  return id;
}

/** An https URL on our CDN host, under its base path, without tricks in the path. */
export function isHostedUrl(value: string, cdnBaseUrl: string): boolean {
  let url: URL;
  let base: URL;
  try {
    url = new URL(value);
    base = new URL(cdnBaseUrl);
  } catch {
    return false;
  }
  const basePath = base.pathname.replace(/\/+$/, '');
  return (
    url.protocol === 'https:' &&
    url.host === base.host &&
    !url.username &&
    !url.password &&
    !url.search &&
    !url.hash &&
    url.pathname.startsWith(`${basePath}/`) &&
    !/(^|\/)\.\.?(\/|$)|%2e|%2f|%5c|\\|\/\//i.test(value.slice(base.origin.length))
  );
}

export function createPackageService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'package', definePackageModels);
  const Package = () => db.models.Package;
  const Claim = () => db.models.Claim;

  /**
   * Takes the package for `holder`. Returns 'taken', 'already' when the holder has it, or
   * the other holder's name when someone else does.
   */
  async function claim(packageId: string, userId: string, holder: string) {
    try {
      await Claim().create({ _id: packageId, holder, userId });
      return 'taken' as const;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const current = await Claim().findById(packageId).lean();
      return current?.holder === holder ? ('already' as const) : (current?.holder ?? DELETED);
    }
  }

  const image = Joi.string()
    .trim()
    .max(PACKAGE_TEXT_LIMITS.image)
    .custom((value: string, helpers) =>
      isHostedUrl(value, config.cdnBaseUrl) ? value : helpers.error('any.invalid'),
    )
    .messages({
      'any.invalid': `{{#label}} must be an https URL of an uploaded file (${config.cdnBaseUrl}/...); upload it with POST /file/single-upload`,
    });

  const onCreate = (schema: Joi.Schema) =>
    schema.when('packageId', { is: Joi.exist(), otherwise: Joi.required() });

  /** Why an edit or a delete found nothing to change: 404 for missing/foreign/deleted. */
  async function explainUnchanged(userId: string, packageId: string, verb: string) {
    const found = await Package().findOne({ _id: packageId, userId, deletedAt: null }).lean();
    if (!found) return notFound(`Package ${packageId} not found`);
    return badRequest(
      `Package ${packageId} is assigned to a delivery and can no longer be ${verb}`,
      [{ field: 'packageId', message: `assigned to delivery ${found.p2pDeliveryId}` }],
    );
  }

  /**
   * Keeps `GET /api/packages` bounded. Counted before the insert, so simultaneous saves may
   * pass the limit by at most their number; nothing but list size depends on it.
   */
  async function ensureRoomForAnother(userId: string) {
    const open = await Package().countDocuments({ userId, deletedAt: null, p2pDeliveryId: null });
    if (open >= config.packageMaxOpen) {
      throw badRequest(
        `You already keep ${open} saved packages that no delivery has taken (at most ${config.packageMaxOpen}); delete some with DELETE /api/package/:packageId or use them in a delivery`,
      );
    }
  }

  /**
   * With an Idempotency-Key the package's id is derived from the request's token: a second
   * insert for it (a retry after a lost answer) meets the first on `_id` and answers it.
   */
  async function createPackage(userId: string, fields: object, idempotencyToken?: string) {
    const _id = idempotencyToken ? nameBasedId('package', userId, idempotencyToken) : undefined;
    const earlier = async () => {
      const found = _id ? await Package().findOne({ _id, userId }).lean() : null;
      return found ? toPackageView(found) : undefined;
    };
    // A replay must not be refused by the limit its own first run filled.
    const replayed = await earlier();
    if (replayed) return replayed;
    await ensureRoomForAnother(userId);
    try {
      const created = await Package().create({ ...fields, userId, ...(_id ? { _id } : {}) });
      return toPackageView(created.toObject());
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const raced = await earlier();
      if (!raced) throw err;
      return raced;
    }
  }

  /** The caller's packages by id, each usable (not deleted, not assigned); 400 otherwise. */
  async function usablePackages(userId: string, ids: string[]) {
    const found = await Package()
      .find({ _id: { $in: ids }, userId, deletedAt: null, p2pDeliveryId: null })
      .lean();
    const byId = new Map(found.map((p) => [p._id, p]));
    const errors: FieldError[] = ids
      .map((id, i) => ({ id, i }))
      .filter(({ id }) => !byId.has(id))
      .map(({ id, i }) => ({
        field: `packagesId.${i}`,
        message: `package ${id} is not one of your packages available for delivery`,
      }));
    if (errors.length > 0) throw badRequest(INVALID_SELECTION, errors);
    return ids.map((id) => byId.get(id) as (typeof found)[number]);
  }

  return {
    name: 'package',
    mixins: [db.mixin()],
    actions: {
      save: action({
        http: {
          group: 'api',
          method: 'POST',
          path: '/package',
          status: 201,
          message: 'Package saved',
          summary: 'Create a package, or edit one with `packageId`',
          description:
            'Without `packageId` every required field is needed; with it only the fields to change. `weight` is derived from `size` × `quantity` and cannot be sent. `value` is the total value in NGN.',
          response: packageView,
          errors: {
            400: 'Invalid input; a package taken by a delivery; or PACKAGE_MAX_OPEN untaken packages already saved',
            404: 'No such package of yours',
          },
        },
        params: Joi.object({
          packageId: uuid(),
          packageType: onCreate(plainText(PACKAGE_TEXT_LIMITS.packageType).min(1)),
          name: onCreate(plainText(PACKAGE_TEXT_LIMITS.name).min(1)),
          image: image.allow(null),
          description: plainText(PACKAGE_TEXT_LIMITS.description).allow(null, ''),
          quantity: onCreate(Joi.number().integer().min(1).max(10_000)),
          size: onCreate(
            Joi.string()
              .uppercase()
              .valid(...PACKAGE_SIZES),
          ),
          value: onCreate(Joi.number().min(0).max(1e11).precision(2)),
          weight: Joi.any().forbidden().messages({
            'any.unknown': 'weight is derived from size and quantity; do not send it',
          }),
        })
          .when(Joi.object({ packageId: Joi.exist() }).unknown(), {
            then: Joi.object().or(
              'packageType',
              'name',
              'image',
              'description',
              'quantity',
              'size',
              'value',
            ),
          })
          .messages({ 'object.missing': 'send at least one field to change' }),
        async handler(ctx) {
          const userId = requireUser(ctx);
          const { packageId, value, description, ...fields } = ctx.params;
          const changes = {
            ...fields,
            ...(value === undefined ? {} : { valueKobo: nairaToKobo(value) }),
            ...(description === undefined ? {} : { description: description || null }),
          };
          if (!packageId) return createPackage(userId, changes, ctx.meta.idempotencyToken);
          // Edits check the claim too; a delivery claims before it marks the package.
          if (await Claim().exists({ _id: packageId })) {
            throw await explainUnchanged(userId, packageId, 'edited');
          }
          const updated = await Package()
            .findOneAndUpdate(
              { _id: packageId, userId, deletedAt: null, p2pDeliveryId: null },
              { $set: changes },
              { new: true },
            )
            .lean();
          if (!updated) throw await explainUnchanged(userId, packageId, 'edited');
          return toPackageView(updated);
        },
      }),

      remove: action({
        http: {
          group: 'api',
          method: 'DELETE',
          path: '/package/:packageId',
          status: 204,
          message: 'Package deleted',
          summary: 'Delete a package that no delivery has taken',
          errors: { 404: 'No such package of yours' },
        },
        params: Joi.object({ packageId: uuid().required() }),
        async handler(ctx) {
          const userId = requireUser(ctx);
          const { packageId } = ctx.params;
          const found = await Package().exists({ _id: packageId, userId, deletedAt: null });
          if (!found) throw notFound(`Package ${packageId} not found`);
          const outcome = await claim(packageId, userId, DELETED);
          if (outcome === 'already' || outcome === DELETED) {
            throw notFound(`Package ${packageId} not found`);
          }
          if (outcome !== 'taken') throw await explainUnchanged(userId, packageId, 'deleted');
          await Package().updateOne({ _id: packageId }, { $set: { deletedAt: new Date() } });
          return null;
        },
      }),

      list: action({
        http: {
          group: 'api',
          method: 'GET',
          path: '/packages',
          message: 'Packages retrieved',
          summary: 'Your packages that no delivery has taken yet, newest first',
          response: Joi.array().items(packageView),
        },
        params: Joi.object({}),
        async handler(ctx) {
          const userId = requireUser(ctx);
          const found = await Package()
            .find({ userId, deletedAt: null, p2pDeliveryId: null })
            .sort({ createdAt: -1 })
            .lean();
          return found.map(toPackageView);
        },
      }),

      /** Internal: weight and value totals of a user's selection; 400 if any is unusable. */
      resolveSelection: action({
        visibility: 'public',
        params: Joi.object({ userId: uuid().required(), packageIds: packageIds() }),
        async handler(ctx) {
          const packages = await usablePackages(ctx.params.userId, ctx.params.packageIds);
          const totalWeightGrams = packages.reduce(
            (sum, p) => sum + packageWeightGrams(p.size as PackageSize, p.quantity),
            0,
          );
          const totalValueKobo = packages.reduce((sum, p) => sum + p.valueKobo, 0);
          return {
            packages: packages.map(toPackageView),
            totalWeightGrams,
            totalValueKobo,
            totalWeight: formatKg(totalWeightGrams),
            totalValue: formatNaira(totalValueKobo),
          };
        },
      }),

      /**
       * Internal: gives the packages to a delivery, each with one conditional update, so two
       * deliveries can never both take a package. Repeating the call is harmless; if any
       * package cannot be taken, the ones this call took are given back and it fails.
       */
      assign: action({
        visibility: 'public',
        params: Joi.object({
          userId: uuid().required(),
          deliveryId: uuid().required(),
          packageIds: packageIds(),
        }),
        async handler(ctx) {
          const { userId, deliveryId, packageIds: ids } = ctx.params;
          const taken: string[] = [];
          const refused: FieldError[] = [];
          for (const [i, id] of ids.entries()) {
            const usable = await Package().exists({ _id: id, userId, deletedAt: null });
            const outcome = usable ? await claim(id, userId, deliveryId) : DELETED;
            if (outcome === 'taken') taken.push(id);
            else if (outcome !== 'already') {
              refused.push({ field: `packagesId.${i}`, message: `package ${id} is not available` });
            }
          }
          if (refused.length > 0) {
            await Claim().deleteMany({ _id: { $in: taken }, holder: deliveryId });
            throw badRequest(INVALID_SELECTION, refused);
          }
          await Package().updateMany(
            { _id: { $in: ids } },
            { $set: { p2pDeliveryId: deliveryId } },
          );
          return { deliveryId, packageIds: ids };
        },
      }),

      /** Internal: gives a delivery's packages back (cancellation, failed payment). */
      release: action({
        visibility: 'public',
        params: Joi.object({ deliveryId: uuid().required() }),
        async handler(ctx) {
          const { deliveryId } = ctx.params;
          const claims = await Claim().find({ holder: deliveryId }).lean();
          const ids = claims.map((c) => c._id);
          await Package().updateMany(
            { _id: { $in: ids }, p2pDeliveryId: deliveryId },
            { $set: { p2pDeliveryId: null } },
          );
          await Claim().deleteMany({ _id: { $in: ids }, holder: deliveryId });
          return { released: ids.length };
        },
      }),
    },
  };
}

import type { Logger } from 'moleculer';
import Joi from '../../libs/joi';
import { Backfills } from '../../libs/backfills';
import type { Config } from '../../libs/config';
import {
  INVALID_SELECTION,
  assignParams,
  releaseParams,
  resolveSelectionParams,
} from '../../libs/contracts/package';
import { badRequest, conflict, notFound, type FieldError } from '../../libs/errors';
import { nameBasedId } from '../../libs/ids';
import { nairaToKobo } from '../../libs/money';
import { ServiceDatabase, isDuplicateKey } from '../../libs/mongo';
import {
  action,
  implement,
  requireUser,
  type ServiceDefinition,
  type WaybillContext,
} from '../../libs/service';
import { packageIdParams, packageView, saveParams, type SaveParams } from './schemas';
import {
  DELETED,
  GIVEN_BACK,
  PackageStore,
  definePackageModels,
  type PackageRecord,
} from './store';
import {
  assignPackages,
  heldPackages,
  recordOlderClaimHolders,
  releasePackages,
} from './assignment';
import { toPackageView, toSelection } from './views';

export function createPackageService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'package', definePackageModels);
  const store = new PackageStore(() => db.models);

  /**
   * Why an edit or a delete found nothing to change: 404 for missing/foreign/deleted; else who
   * holds it, as its claim says (a delivery marks the package only after claiming it, and a
   * release clears the mark before it drops the claim, so the mark alone may name nobody).
   * `claimedBy`: the holder the caller read the claim to name, when it did.
   */
  async function explainUnchanged(
    userId: string,
    packageId: string,
    verb: string,
    claimedBy?: string,
  ) {
    const found = await store.findLive(userId, packageId);
    if (!found) return notFound(`Package ${packageId} not found`);
    const holder = claimedBy ?? (await store.holderOf(packageId)) ?? found.p2pDeliveryId;
    if (holder === DELETED) {
      // A delete that stopped between its claim and its mark: another DELETE finishes it.
      return badRequest(
        `Package ${packageId} is being deleted and can no longer be ${verb}; send DELETE /api/package/${packageId} again to finish deleting it`,
        [{ field: 'packageId', message: 'being deleted' }],
      );
    }
    if (!holder) {
      // Given back between the refusal and this read.
      return badRequest(
        `Package ${packageId} was assigned to a delivery that has just given it back; send the request again`,
        [{ field: 'packageId', message: 'given back by a delivery a moment ago' }],
      );
    }
    return badRequest(
      `Package ${packageId} is assigned to a delivery and can no longer be ${verb}`,
      [{ field: 'packageId', message: `assigned to delivery ${holder}` }],
    );
  }

  /**
   * Keeps `GET /api/packages` bounded. Counted before the insert, so simultaneous saves may
   * pass the limit by at most their number; nothing but list size depends on it.
   */
  async function ensureRoomForAnother(userId: string) {
    // Counting reads every package the user ever saved: only when there may be too many.
    if ((await store.savedCount(userId)) < config.packageMaxOpen) return;
    const open = await store.countOpen(userId);
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
      const found = _id ? await store.findOwn(userId, _id) : null;
      return found ? toPackageView(found) : undefined;
    };
    // A replay must not be refused by the limit its own first run filled.
    const replayed = await earlier();
    if (replayed?.deletedAt) {
      throw conflict(
        `This Idempotency-Key already created package ${replayed.id}, since deleted; send a new Idempotency-Key to save another package`,
      );
    }
    if (replayed) return replayed;
    await ensureRoomForAnother(userId);
    try {
      return toPackageView(await store.insert({ ...fields, userId, ...(_id ? { _id } : {}) }));
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const raced = await earlier();
      if (!raced) throw err;
      return raced;
    }
  }

  /**
   * One edit of a package at a time (`store.edits`): another waits for it. Only the owner's
   * edits wait on the package, so nobody else can hold theirs up.
   */
  async function editPackage(
    userId: string,
    packageId: string,
    changes: Record<string, unknown>,
    logger: Logger | undefined,
  ) {
    if (!(await store.findOwn(userId, packageId))) throw notFound(`Package ${packageId} not found`);
    return store.edits.holding(
      packageId,
      async () => {
        // Edits check the claim too; a delivery claims before it marks the package.
        const holder = await store.holderOf(packageId);
        if (holder !== null) throw await explainUnchanged(userId, packageId, 'edited', holder);
        const updated = await store.updateOpen(userId, packageId, changes);
        if (!updated) throw await explainUnchanged(userId, packageId, 'edited');
        return toPackageView(updated);
      },
      logger,
    );
  }

  /** The caller's packages by id, each usable (not deleted, not assigned); 400 otherwise. */
  async function usablePackages(userId: string, ids: string[]): Promise<PackageRecord[]> {
    const byId = new Map((await store.findOpen(userId, ids)).map((p) => [p._id, p]));
    const errors: FieldError[] = ids
      .map((id, i) => ({ id, i }))
      .filter(({ id }) => !byId.has(id))
      .map(({ id, i }) => ({
        field: `packagesId.${i}`,
        message: `package ${id} is not one of your packages available for delivery`,
      }));
    if (errors.length > 0) throw badRequest(INVALID_SELECTION, errors);
    return ids.map((id) => byId.get(id) as PackageRecord);
  }

  // Awaited: until it is done a user's older packages are missing from their list, so the
  // limit of open packages, counted on it, would let more through.
  const backfills = new Backfills(
    [
      {
        what: "packages saved before their users' lists",
        run: (pass) => store.listStoredPackages(pass),
        awaited: true,
      },
      // Not awaited: until it has run after a rollout's time, a release without a selection
      // reads every claim, as before it.
      {
        what: 'deliveries holding packages an older version took',
        run: (pass) => recordOlderClaimHolders(store, pass),
      },
    ],
    config.backfillAfterRolloutMs,
  );

  return {
    name: 'package',
    mixins: [db.mixin()],
    async started() {
      await backfills.start(this.logger);
    },
    async stopped() {
      await backfills.stop();
    },
    actions: {
      save: action({
        // A new package is named after its Idempotency-Key (decision 32).
        retry: 'keyed',
        http: {
          group: 'api',
          method: 'POST',
          path: '/package',
          status: 201,
          creates: 'packageId',
          // A delivery's packages, a quote's in Mode A.
          listedAs: 'packagesId',
          message: 'Package saved',
          summary: 'Create a package, or edit one with `packageId`',
          description:
            'Without `packageId` every required field is needed; with it only the fields to change. `weight` is derived from `size` × `quantity` and cannot be sent. `value` is the total value in NGN. `image` must be the URL of a file uploaded with `POST /file/single-upload`.',
          response: packageView,
          errors: {
            400: 'Invalid input; a package taken by a delivery, or being deleted (send its DELETE again); or PACKAGE_MAX_OPEN untaken packages already saved',
            404: 'No such package of yours',
            409: 'The Idempotency-Key is held by a request still in progress or of unknown outcome (retry after the seconds in `Retry-After`), or it created a package since deleted (send a new key); or another edit of the package held it for 5 s (send the edit again)',
          },
        },
        params: saveParams(config.cdnBaseUrl),
        async handler(ctx: WaybillContext<SaveParams>) {
          const userId = requireUser(ctx);
          const { packageId, value, description, ...fields } = ctx.params;
          const changes = {
            ...fields,
            ...(value === undefined ? {} : { valueKobo: nairaToKobo(value) }),
            ...(description === undefined ? {} : { description: description || null }),
          };
          if (packageId) return editPackage(userId, packageId, changes, ctx.service?.logger);
          return createPackage(userId, changes, ctx.meta.idempotencyToken);
        },
      }),

      remove: action({
        // A repeat would answer 404 for a package this call deleted.
        retry: 'never',
        http: {
          group: 'api',
          method: 'DELETE',
          path: '/package/:packageId',
          status: 204,
          message: 'Package deleted',
          summary: 'Delete a package that no delivery has taken',
          errors: {
            400: 'The package is assigned to a delivery (the message names it) and can no longer be deleted; invalid input',
            404: 'No such package of yours',
          },
        },
        params: packageIdParams,
        async handler(ctx) {
          const userId = requireUser(ctx);
          const { packageId } = ctx.params;
          if (!(await store.isLive(userId, packageId))) {
            throw notFound(`Package ${packageId} not found`);
          }
          const outcome = await store.claim(packageId, userId, DELETED);
          // Claimed for deletion and still live: a delete that stopped before its mark (or
          // its twin, marking now): finished here, so the package does not stay half-deleted.
          if (outcome === 'taken' || outcome === 'already') {
            await store.markDeleted(packageId);
            return null;
          }
          throw await explainUnchanged(
            userId,
            packageId,
            'deleted',
            outcome === GIVEN_BACK ? undefined : outcome,
          );
        },
      }),

      list: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/packages',
          message: 'Packages retrieved',
          summary: 'Your packages that no delivery has taken yet, newest first',
          description:
            'At most PACKAGE_MAX_OPEN (400), newest saved first. Saves stop at that many, but packages given back by deliveries that did not deliver them (cancelled, failed, returned, no courier found) come back whatever the count: past it, the list shows the PACKAGE_MAX_OPEN most recently saved or given back; the others stay usable by id (edit, delete, deliver) and reappear as these are used or deleted.',
          response: Joi.array().items(packageView).max(config.packageMaxOpen),
        },
        params: Joi.object({}),
        async handler(ctx) {
          // Bounded whatever the count (decision 33): returns may pass the limit saves keep.
          const open = await store.listOpen(requireUser(ctx), config.packageMaxOpen);
          return open.map(toPackageView);
        },
      }),

      /** Internal: weight and value totals of a user's selection; 400 if any is unusable. */
      resolveSelection: implement('package.resolveSelection', {
        visibility: 'public',
        params: resolveSelectionParams,
        async handler(ctx) {
          return toSelection(await usablePackages(ctx.params.userId, ctx.params.packageIds));
        },
      }),

      /** Internal: gives the packages to a delivery, all or none (./assignment). */
      assign: implement('package.assign', {
        visibility: 'public',
        params: assignParams,
        async handler(ctx) {
          const { deliveryId, packageIds } = ctx.params;
          const assigned = await assignPackages(store, ctx.params);
          if (assigned.outcome === 'conflict') throw conflict(assigned.message);
          if (assigned.outcome === 'refused') throw badRequest(INVALID_SELECTION, assigned.refused);
          return { deliveryId, ...toSelection(await heldPackages(store, packageIds)) };
        },
      }),

      /** Internal: gives a delivery's packages back, and keeps later assigns from taking any. */
      release: implement('package.release', {
        visibility: 'public',
        params: releaseParams,
        async handler(ctx) {
          return { released: await releasePackages(store, ctx.params.deliveryId) };
        },
      }),
    },
  };
}

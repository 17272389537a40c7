import Joi from '../joi';
import { uuid } from '../schemas';
import type { Retry } from './retry';

/** What other services may know of the package service. */

export const PACKAGE_SIZES = ['SMALL', 'MEDIUM', 'LARGE'] as const;
export type PackageSize = (typeof PACKAGE_SIZES)[number];

/** The message of the 400 when a selection names a package that cannot be used. */
export const INVALID_SELECTION = 'Invalid packages selection';

/** The package record of the API: money and weight as decimal strings, links null until set. */
export interface PackageView {
  id: string;
  userId: string;
  p2pDeliveryId: string | null;
  errandDeliveryId: string | null;
  errandStoreId: string | null;
  productId: string | null;
  variantCombinationId: string | null;
  packageType: string;
  name: string;
  image: string | null;
  description: string | null;
  quantity: number;
  weight: string;
  value: string;
  size: PackageSize;
  type: 'PACKAGE_ITEM';
  selectedOptions: unknown[];
  createdAt: string;
  updatedAt: string;
  deletedAt: string | null;
}

/**
 * A selection names each package once. Ids are read in lower case (a UUID of upper-case hex
 * digits is the same id), so one id in two cases is one package named twice: refused, as the
 * same id twice is. JSON Schema's `uniqueItems` compares the texts, so the document says it in
 * words (docs/api-conventions.md, "Input").
 */
export const PACKAGES_ONCE =
  'Each package once: ids are compared in lower case, so one id sent in two cases is refused (400) like the same id twice';

/** At most 50 distinct package ids, as a delivery or a quote names them. */
export const packageIds = () =>
  Joi.array().items(uuid()).min(1).max(50).unique().description(PACKAGES_ONCE);

export interface ResolveSelectionParams {
  userId: string;
  packageIds: string[];
}

export const resolveSelectionParams = Joi.object<ResolveSelectionParams, true>({
  userId: uuid().required(),
  packageIds: packageIds().required(),
});

/** Totals of a selection: integers for arithmetic, decimal strings for answers. */
export interface Selection {
  packages: PackageView[];
  totalWeightGrams: number;
  totalValueKobo: number;
  totalWeight: string;
  totalValue: string;
}

/** The packages a delivery took, as they were when taken, with their totals. */
export interface AssignedPackages extends Selection {
  deliveryId: string;
}

export interface AssignParams {
  userId: string;
  deliveryId: string;
  packageIds: string[];
}

export const assignParams = Joi.object<AssignParams, true>({
  userId: uuid().required(),
  deliveryId: uuid().required(),
  packageIds: packageIds().required(),
});

export interface ReleaseParams {
  deliveryId: string;
}

export const releaseParams = Joi.object<ReleaseParams, true>({
  deliveryId: uuid().required(),
});

export interface PackageActions {
  /** A user's selection with its totals; 400 INVALID_SELECTION if any package is unusable. */
  'package.resolveSelection': { params: ResolveSelectionParams; answer: Selection };
  /**
   * Gives the packages to a delivery, all or none (400 INVALID_SELECTION), and answers them as
   * they were when taken: the delivery is priced from this snapshot, so an edit racing the
   * request cannot change what is charged. Safe to repeat with the same delivery id (the
   * repeat answers the packages as they are, which no one can edit any more).
   */
  'package.assign': { params: AssignParams; answer: AssignedPackages };
  /** Gives a delivery's packages back (cancellation, failed payment). Safe to repeat. */
  'package.release': { params: ReleaseParams; answer: { released: number } };
}

/** Which package actions may be repeated on another node: all three are safe by design. */
export const PACKAGE_RETRY = {
  'package.resolveSelection': 'safe',
  'package.assign': 'safe',
  'package.release': 'safe',
} as const satisfies Record<keyof PackageActions, Retry>;

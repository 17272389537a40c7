import { PACKAGE_TEXT_LIMITS } from '../../services/package/schemas';
import { widest } from './message-size';

/** The texts of the largest package validation lets through. */
export const LARGEST_PACKAGE_TEXTS = {
  packageType: widest(PACKAGE_TEXT_LIMITS.packageType),
  name: widest(PACKAGE_TEXT_LIMITS.name),
  description: widest(PACKAGE_TEXT_LIMITS.description),
};

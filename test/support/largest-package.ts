import { PACKAGE_TEXT_LIMITS } from '../../services/package/schemas';

/** Three bytes in UTF-8 and in JSON for one UTF-16 unit: the most plain text can take. */
const widest = (length: number) => '€'.repeat(length);

/** The texts of the largest package validation lets through. */
export const LARGEST_PACKAGE_TEXTS = {
  packageType: widest(PACKAGE_TEXT_LIMITS.packageType),
  name: widest(PACKAGE_TEXT_LIMITS.name),
  description: widest(PACKAGE_TEXT_LIMITS.description),
};

import { PACKAGE_TEXT_LIMITS } from '../../services/package/schemas';

/**
 * Four bytes in UTF-8 and in JSON for one character (limits count code points): the most
 * plain text can take, as it refuses control characters and lone surrogates (six as `\uXXXX`).
 */
const widest = (length: number) => '😀'.repeat(length);

/** The texts of the largest package validation lets through. */
export const LARGEST_PACKAGE_TEXTS = {
  packageType: widest(PACKAGE_TEXT_LIMITS.packageType),
  name: widest(PACKAGE_TEXT_LIMITS.name),
  description: widest(PACKAGE_TEXT_LIMITS.description),
};

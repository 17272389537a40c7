import { credit, savePackage, type Party } from '../../test/support/deliveries';
import { createUserWithKey } from '../../test/support/http';
import { waitForQuote } from '../../test/support/quote';
import { inParallel } from '../bench-support';

/** Open packages one merchant may hold (PACKAGE_MAX_OPEN's ceiling). */
const PACKAGES_PER_MERCHANT = 400;
/** What each merchant's wallet is credited with: far more than 400 deliveries cost. */
const FUNDS_NGN = 100_000_000;

/** A package to deliver and the merchant whose it is. */
export interface FundedPackage {
  merchant: Party;
  packageId: string;
}

/**
 * `count` saved packages for a benchmark's delivery requests, every 400 a new merchant's (one
 * merchant's load at a time) with a wallet that pays for them all: the merchants, and the
 * packages in order. `ready` is told once the platform quotes, before the packages are saved.
 */
export async function fundedPackages(
  url: string,
  count: number,
  ready: () => void = () => undefined,
): Promise<{ merchants: Party[]; packages: FundedPackage[] }> {
  const merchants = await inParallel(
    Array.from({ length: Math.ceil(count / PACKAGES_PER_MERCHANT) }),
    async () => {
      const who = await createUserWithKey(url);
      await credit(url, who, FUNDS_NGN);
      return who;
    },
  );
  await waitForQuote(url, merchants[0].key);
  ready();
  const packages = await inParallel(
    Array.from({ length: count }, (_, i) => merchants[Math.floor(i / PACKAGES_PER_MERCHANT)]),
    async (merchant) => ({ merchant, packageId: await savePackage(url, merchant) }),
  );
  return { merchants, packages };
}

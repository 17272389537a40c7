import type {
  DeliveryFeeBlock,
  FeeAmounts,
  FeePayer,
  PayOnDeliveryBlock,
  PricedDelivery,
} from '../../libs/contracts/pricing';
import { formatNaira } from '../../libs/money';

/** Integer kobo each party owes. SPLIT gives the odd kobo to the creator. */
export function splitTotal(totalKobo: number, payer: FeePayer): PricedDelivery['shares'] {
  if (payer === 'CREATOR') return { creator: totalKobo, recipient: 0 };
  if (payer === 'RECIPIENT') return { creator: 0, recipient: totalKobo };
  const recipient = Math.floor(totalKobo / 2);
  return { creator: totalKobo - recipient, recipient };
}

/**
 * The `deliveryFee` block at pricing time: nothing is paid yet, the recipient has no checkout
 * link yet, and no promotion is applied on this endpoint.
 */
export function deliveryFeeBlock(fees: FeeAmounts, payer: FeePayer): DeliveryFeeBlock {
  const shares = splitTotal(fees.total, payer);
  return {
    payer,
    gross: {
      delivery: formatNaira(fees.deliverySubtotal),
      serviceFee: formatNaira(fees.serviceFee),
      hubCommission: formatNaira(fees.hubCommission),
      bundledTotal: formatNaira(fees.total),
    },
    creator: {
      amount: formatNaira(shares.creator),
      paymentRequired: shares.creator > 0,
      paid: false,
    },
    recipient: {
      amount: formatNaira(shares.recipient),
      paymentRequired: shares.recipient > 0,
      paid: false,
      checkoutUrl: null,
    },
    promotion: {
      settlementMode: null,
      platformFunded: false,
      settledAmount: '0.00',
      discountAmount: '0.00',
      isApplied: false,
    },
  };
}

/**
 * Matching can start as soon as the creator pays only when the recipient owes nothing;
 * otherwise it waits for the recipient's checkout.
 */
export function isMatchingEligible(payer: FeePayer): boolean {
  return payer === 'CREATOR';
}

/** What a courier would collect at the door: the declared value of the packages. */
export function payOnDeliveryBlock(enabled: boolean, valueKobo: number): PayOnDeliveryBlock {
  return {
    enabled,
    collectAmount: formatNaira(valueKobo),
    collectTarget: 'PACKAGE_VALUE',
  };
}

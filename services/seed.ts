import type { ServiceBroker } from 'moleculer';
import { call } from '../libs/contracts';
import { formatNaira } from '../libs/money';

export const DEMO_USER = {
  name: 'Demo Merchant',
  email: 'demo@waybill.local',
  phone: '+2348000000000',
};

/** What the demo wallet is funded with, once: NGN 100,000.00. */
export const DEMO_FUNDS_KOBO = 10_000_000;

/**
 * Idempotent demo data: the demo user, its wallet funded once (the credit's reference is
 * fixed), and a staging key printed the first time only (keys are stored hashed, so an
 * existing key cannot be shown again).
 */
export async function seedDemoData(broker: ServiceBroker): Promise<string[]> {
  const found = await call(broker, 'account.findUsers', { email: DEMO_USER.email });
  const user = found[0] ?? (await call(broker, 'account.createUser', DEMO_USER));
  await call(broker, 'payment.credit', {
    userId: user.id,
    amountKobo: DEMO_FUNDS_KOBO,
    reference: `seed:${user.id}`,
    description: 'Demo funds',
  });
  const wallet = await call(broker, 'payment.balance', { userId: user.id });
  const keys = await call(broker, 'account.listApiKeys', { userId: user.id });
  const lines = [
    `Demo user: ${user.email} (id ${user.id})`,
    `Demo wallet: NGN ${formatNaira(wallet.balanceKobo)}`,
  ];
  const active = keys.find((k) => k.environment === 'staging' && !k.revokedAt);
  if (active) {
    lines.push(
      `The demo user already has a staging API key (id ${active.id}); it was printed when created.`,
      `Create another with: npm run cli -- keys:create ${user.id}`,
    );
    return lines;
  }
  const key = await call(broker, 'account.createApiKey', {
    userId: user.id,
    environment: 'staging',
  });
  lines.push(
    `Staging API key (shown once, keep it): ${key.key}`,
    `Try: curl -H "api-key: ${key.key}" http://127.0.0.1:3000/api/me`,
  );
  return lines;
}

import type { ServiceBroker } from 'moleculer';
import type { AppEnvironment } from '../libs/config';
import { call } from '../libs/contracts';
import { badRequest, isWaybillError } from '../libs/errors';
import type { CourierView } from '../libs/contracts/matching';
import { nameBasedId } from '../libs/ids';
import { formatNaira } from '../libs/money';

export const DEMO_USER = {
  name: 'Demo Merchant',
  email: 'demo@waybill.local',
  phone: '+2348000000000',
};

/** What the demo wallet is funded with, once: NGN 100,000.00. */
export const DEMO_FUNDS_KOBO = 10_000_000;

interface DemoCourier {
  city: 'Lagos' | 'Abuja';
  name: string;
  phone: string;
  /** A fleet type geo adds when it first starts (services/geo/fleet-types.ts). */
  fleetCode: 'bike' | 'car' | 'van';
  regNo: string;
  make: string;
  model: string;
  colour: string;
}

/** Couriers of the demo, with Lagos and FCT (Abuja) plates; the first is on the demo merchant's list. */
export const DEMO_COURIERS: readonly DemoCourier[] = [
  {
    city: 'Lagos',
    name: 'Tunde Bakare',
    phone: '+2348031234567',
    fleetCode: 'bike',
    regNo: 'LSD-482-XY',
    make: 'Bajaj',
    model: 'Boxer BM150',
    colour: 'Red',
  },
  {
    city: 'Lagos',
    name: 'Chioma Eze',
    phone: '+2348052345678',
    fleetCode: 'car',
    regNo: 'KJA-217-AB',
    make: 'Toyota',
    model: 'Corolla',
    colour: 'Silver',
  },
  {
    city: 'Abuja',
    name: 'Musa Ibrahim',
    phone: '+2348063456789',
    fleetCode: 'bike',
    regNo: 'ABJ-305-KY',
    make: 'Honda',
    model: 'Ace 125',
    colour: 'Black',
  },
  {
    city: 'Abuja',
    name: 'Aisha Bello',
    phone: '+2348074567890',
    fleetCode: 'van',
    regNo: 'BWR-118-FC',
    make: 'Toyota',
    model: 'HiAce',
    colour: 'White',
  },
];

/** A demo courier's id: the same on every run, so that a run finds what an earlier one made. */
export const demoCourierId = (courier: DemoCourier) => nameBasedId('demo-courier', courier.regNo);

/** The demo couriers, each created once, with fleet types from geo's defaults. */
async function seedDemoCouriers(broker: ServiceBroker): Promise<CourierView[]> {
  const fleetTypes = await call(broker, 'geo.listFleetTypes', { activeOnly: false });
  const couriers: CourierView[] = [];
  for (const demo of DEMO_COURIERS) {
    const courierId = demoCourierId(demo);
    const typeId = fleetTypes.find((t) => t.code === demo.fleetCode)?.id;
    if (!typeId) throw new Error(`the ${demo.fleetCode} fleet type is missing from geo`);
    const { regNo, make, model, colour } = demo;
    const find = () => call(broker, 'courier-matching.getCourier', { courierId });
    const create = () =>
      broker.call('courier-matching.createCourier', {
        id: courierId,
        name: demo.name,
        phone: demo.phone,
        fleet: { typeId, regNo, make, model, colour },
      }) as Promise<CourierView>;
    // A seed running at the same moment may create it first (409 here): then it is found.
    const orFound = async (err: unknown) => (await find()) ?? Promise.reject(err);
    couriers.push((await find()) ?? (await create().catch(orFound)));
  }
  return couriers;
}

/**
 * Demo data is for staging. Live, its credit would be money no payment backs on the ledger,
 * spendable on real deliveries, and its couriers made-up people offered real ones: refused
 * before anything starts.
 */
export function refuseSeedIn(appEnv: AppEnvironment): void {
  if (appEnv !== 'live') return;
  throw badRequest(
    `seed: refused with APP_ENV=live: it would credit NGN ${formatNaira(DEMO_FUNDS_KOBO)} that no payment backs to the live ledger and add demo couriers that real deliveries would be offered to. Run it against staging only`,
  );
}

/** The demo user, created unless found; found again when a seed run at the same time made it. */
export async function demoUser(broker: ServiceBroker) {
  const find = async () =>
    (await call(broker, 'account.findUsers', { email: DEMO_USER.email }))[0] ?? null;
  const found = await find();
  if (found) return found;
  try {
    return await call(broker, 'account.createUser', DEMO_USER);
  } catch (err) {
    const made = isWaybillError(err) && err.code === 409 ? await find() : null;
    if (!made) throw err;
    return made;
  }
}

/**
 * Idempotent demo data: the demo user, its wallet funded once (the credit's reference is
 * fixed), demo couriers in Lagos and Abuja (fixed ids) with the first on the user's list, and
 * a staging key printed the first time only (keys are stored hashed, so an existing key
 * cannot be shown again).
 */
export async function seedDemoData(broker: ServiceBroker): Promise<string[]> {
  const user = await demoUser(broker);
  const couriers = await seedDemoCouriers(broker);
  const [listed] = couriers;
  await broker.call('courier-matching.addMerchantCourier', {
    userId: user.id,
    courierId: listed.id,
  });
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
    ...DEMO_COURIERS.map(
      (demo, i) =>
        `Demo courier in ${demo.city}: ${couriers[i].name}, ${couriers[i].fleet.regNo} (id ${couriers[i].id})`,
    ),
    `On the demo user's courier list: ${listed.name} (GET /admin/users/${user.id}/couriers)`,
  ];
  const active = keys.find((k) => k.environment === 'staging' && !k.revokedAt);
  if (active) {
    lines.push(
      `The demo user already has a staging API key (id ${active.id}), shown once when it was made.`,
      `Lost it? Revoke it and create another: npm run cli -- keys:revoke ${active.id} && npm run cli -- keys:create ${user.id}`,
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

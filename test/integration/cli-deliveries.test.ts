import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ROOT, runTypeScript } from '../support/node-run';
import { acceptOffer, courierAt, offerOf } from '../support/couriers';
import {
  balanceOf,
  credit,
  entriesOf,
  ORIGIN,
  requestDelivery,
  savePackage,
} from '../support/deliveries';
import { useMerchantStack } from '../support/merchant-stack';
import { operatorsReason } from '../../services/order/delivery-admin';
import { DELIVERY_NOT_FOUND } from '../../services/order/parties';
import { eventually } from '../support/eventually';

/**
 * `waybill deliveries` against a running platform: the CLI runs no service of its own and
 * calls the platform's order service over NATS, in the platform's namespace.
 */
const stack = useMerchantStack({
  internal: ['order'],
  env: {
    MATCHING_SEARCH_TIMEOUT_MS: '60000',
    MATCHING_OFFER_TIMEOUT_MS: '30000',
    // The operators' moves are info lines.
    LOG_LEVEL: 'info',
  },
});
const base = () => stack.node.url;
const CLI = join(ROOT, 'bin', 'waybill.ts');

function cli(args: string[], namespace = stack.iso.namespace, env: NodeJS.ProcessEnv = {}) {
  return runTypeScript(CLI, args, {
    env: {
      ...process.env,
      WAYBILL_OPERATOR: 'tunde',
      NAMESPACE: namespace,
      MONGO_DB_PREFIX: stack.iso.dbPrefix,
      MONGO_TIMEOUT_MS: '1000',
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

/** The platform's log lines of operators' moves of `deliveryId`. */
const movesLogged = (deliveryId: string) =>
  stack.node
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter(
      (line) => line.msg === 'delivery moved by an operator' && line.deliveryId === deliveryId,
    );

describe('waybill deliveries', () => {
  it('shows a delivery, refuses a step its status does not take, and fails it for its courier', async () => {
    const merchant = stack.alice;
    await credit(base(), merchant, 100_000);
    const courier = await courierAt(base(), { lat: ORIGIN.lat + 0.003, lon: ORIGIN.lon });
    const packageId = await savePackage(base(), merchant);
    const created = await requestDelivery(base(), merchant, [packageId], {
      courierSelection: 'SPECIFIC',
      courierId: courier.id,
    });
    expect(created.status).toBe(201);
    const deliveryId = created.body.data.deliveryId as string;
    await acceptOffer(base(), courier, await offerOf(base(), courier));
    const before = Number(await balanceOf(base(), merchant));

    const shown = await cli(['deliveries', 'show', deliveryId]);
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: deliveryId,
      userId: merchant.userId,
      status: 'COURIER_ASSIGNED',
    });

    const failFrom = (status: string) =>
      cli([
        'deliveries',
        'fail',
        deliveryId,
        '--reason',
        'Bike broke down',
        '--expected-status',
        status,
      ]);
    const early = await cli(['deliveries', 'returned', deliveryId]);
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^waybill: .*COURIER_ASSIGNED/);
    const moved = await failFrom('ARRIVED_AT_PICKUP');
    expect(moved.code).toBe(1);
    expect(moved.stderr).toMatch(/no longer ARRIVED_AT_PICKUP/);

    const failed = await failFrom('COURIER_ASSIGNED');
    expect({ code: failed.code, stderr: failed.stderr }).toEqual({ code: 0, stderr: '' });
    // The platform's order service logs who moved it: the command's operator.
    await eventually(() =>
      expect(movesLogged(deliveryId)).toEqual([
        expect.objectContaining({ event: 'FAILED', status: 'FAILED', operator: 'cli:tunde' }),
      ]),
    );
    expect(JSON.parse(failed.stdout)).toMatchObject({
      id: deliveryId,
      status: 'FAILED',
      failure: { reason: operatorsReason('Bike broke down') },
    });
    // Before collection everything is given back, as through the admin API.
    await eventually(async () => {
      const refunds = (await entriesOf(base(), merchant)).filter((e) => e.type === 'REFUND');
      expect(refunds).toHaveLength(1);
    });
    expect(Number(await balanceOf(base(), merchant))).toBeGreaterThan(before);
  }, 120_000);

  it('says what is wrong with an id, and that no delivery has it', async () => {
    const bad = await cli(['deliveries', 'show', 'not-an-id']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/deliveryId must be a valid GUID/);
    const unknown = await cli(['deliveries', 'returned', randomUUID()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`waybill: ${DELIVERY_NOT_FOUND}\n`);
  }, 60_000);

  it('needs, live, only what reaches the platform: none of the services’ keys or providers', async () => {
    // An operator's shell beside the platform: NATS and its namespace, nothing of the Secret.
    const only = { APP_ENV: 'live', PUBLIC_BASE_URL: 'https://waybill.example.ng' };
    const env = Object.fromEntries(
      Object.keys(process.env)
        .filter((name) =>
          /^(ADMIN_TOKEN|PROOF_CODE_SECRET|WEBHOOK_SECRET_KEY|SMTP_URL|PAYSTACK_SECRET_KEY|TERMII_\w+|S3_\w+)$/.test(
            name,
          ),
        )
        .map((name) => [name, undefined]),
    );
    const shown = await cli(['deliveries', 'show', randomUUID()], stack.iso.namespace, {
      ...env,
      ...only,
    });
    expect(shown.stderr).toBe(`waybill: ${DELIVERY_NOT_FOUND}\n`);
    expect(shown.code).toBe(1);
  }, 60_000);

  it('says when no order service answers in its namespace', async () => {
    const elsewhere = await cli(
      ['deliveries', 'show', randomUUID()],
      `t-${randomUUID().slice(0, 8)}`,
    );
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(
      /^waybill: no order service answered within \d+ s on NATS in namespace "t-[0-9a-f]{8}": is the platform running/,
    );
  }, 60_000);
});

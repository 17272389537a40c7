import type { Logger, ServiceBroker } from 'moleculer';
import { Backfills } from '../../libs/backfills';
import type { Config } from '../../libs/config';
import { FLEET_TYPES_CHANGED_EVENT, type GeoEvents } from '../../libs/contracts/geo';
import {
  assignCourierParams,
  getAddressParams,
  matchingEndParams,
  recipientsView,
  TRACKING_ID_IN_TEXT,
} from '../../libs/contracts/order';
import type { PaymentFailure, PaymentOutcome } from '../../libs/contracts/payment';
import { badRequest } from '../../libs/errors';
import {
  COURIERS_MOVED_EVENT,
  SIMULATE_HEADER,
  SIMULATION_MODES,
  type MatchingEvents,
  type SimulationMode,
} from '../../libs/contracts/matching';
import { registerHealthCheck, unregisterHealthCheck } from '../../libs/health';
import { channelSenders } from '../../libs/messaging/channels';
import { OutboxSender } from '../../libs/messaging/outbox-sender';
import { ServiceDatabase } from '../../libs/mongo';
import { connectRedis, createRedis, redisReady } from '../../libs/redis';
import { pageInOneReply } from '../../libs/reply-size';
import {
  action,
  implement,
  requireCourier,
  requireUser,
  type AuthUser,
  type ServiceDefinition,
  type WaybillContext,
} from '../../libs/service';
import { CANCEL_LIMIT, CANCEL_WINDOW_MS, CancelWindow, LOST_SLOT_AGE_MS } from './cancel-window';
import { Cancellations } from './cancellation';
import { changeableBy, readableBy, roleOf } from './parties';
import { COURIER_STEPS, CourierRun, NOT_YOUR_DELIVERY, type CourierStep } from './courier-run';
import { courierIfReadable, courierViewer, sharedReads } from './courier-view';
import { createDeliveryAdminActions } from './delivery-admin';
import type { DeliveryRecord } from './delivery-record';
import { notificationOutbox } from './notification-outbox';
import { Outbox } from './outbox';
import { PaymentOutcomes } from './payment-outcomes';
import { ProofChecks } from './proofs';
import { Simulator } from './simulator';
import { isFollowed } from './tracking';
import { isTerminal } from './lifecycle';
import type { RequestParams } from './request-input';
import { DeliveryRequests } from './requests';
import {
  cancelledView,
  createdView,
  deliveryIdParams,
  deliveryView,
  DELIVERIES_ALWAYS_FIT,
  DELIVERY_PAGE_MAX,
  listParams,
  notificationView,
  courierCodeStepParams,
  courierDeliveryView,
  courierFailedParams,
  courierStepParams,
  notificationsParams,
  proofParams,
  proofView,
  requestParams,
  type ListParams,
} from './schemas';
import { Settlement } from './settlement';
import { defineOrderModels, OrderStore } from './store';
import { OrderSweep } from './sweep';
import { createTrackingActions } from './tracking-actions';
import { DeliveryTransitions } from './transitions';
import {
  toAddressView,
  toCourierDeliveryView,
  toCreatedView,
  toDeliveryView,
  toNotificationView,
  toProofView,
} from './views';
import Joi from '../../libs/joi';
import { call } from '../../libs/contracts';
import { Announcer } from './announcer';

/** How often the sandbox's virtual couriers move and report their steps. */
const SIMULATOR_TICK_MS = 250;

export const SIMULATION_IN_LIVE = `${SIMULATE_HEADER} is for staging only: live deliveries go to real couriers; remove the header`;

/** What a step that takes a proof code may answer besides the others' errors. */
const CODE_STEP_ERRORS: Record<number, string> = {
  400: 'The code is required',
  422: 'Wrong code (the message says how many tries are left)',
};

export function createOrderService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'order', defineOrderModels);
  const store = new OrderStore(() => db.models);
  let broker: ServiceBroker;
  let logger: Logger;
  const redis = createRedis(
    config.redisUrl,
    `${config.namespace}-order`,
    (err) =>
      logger?.warn('Redis unreachable; cancellations answer 503 until it is back', {
        err: err.message,
      }),
    { commandTimeoutMs: config.redisCommandTimeoutMs },
  );
  const outbox = new Outbox(store, config.notifications.publicBaseUrl, config.appEnv);
  const courierOf = courierViewer(config.courierPositions.onlineMs);
  const callersCourier = courierIfReadable(courierOf, () => logger, 'to its merchant');
  const shared = { store, outbox, courierOf, services: () => broker, logger: () => logger };
  const transitions = new DeliveryTransitions(store, (deliveryId, err) =>
    logger.warn('delivery document not written; the next read repairs it', { deliveryId, err }),
  );
  const announcer = new Announcer({ ...shared, transitions });
  const proofs = new ProofChecks(store, config.order.proofCodeSecret, config.appEnv);
  const settlement = new Settlement({
    ...shared,
    announcer,
    proofs,
    scheduledSearchLeadMs: config.order.scheduledSearchLeadMs,
    answerWithinMs: Math.floor(config.requestTimeoutMs / 2),
  });
  const requests = new DeliveryRequests({
    ...shared,
    config: config.order,
    transitions,
    settlement,
    announcer,
  });
  const cancellations = new Cancellations({
    transitions,
    stored: (deliveryId, userId) => requests.stored(deliveryId, userId),
    settlement,
    window: new CancelWindow(redis, {
      keyPrefix: `${config.namespace}:cancels:`,
      limit: CANCEL_LIMIT,
      windowMs: CANCEL_WINDOW_MS,
    }),
    lostAfterMs: Math.max(config.order.staleRequestMs, LOST_SLOT_AGE_MS),
    logger: () => logger,
  });
  const outcomes = new PaymentOutcomes({ ...shared, transitions, settlement });
  const courierRun = new CourierRun({ transitions, settlement, proofs });
  const simulator = new Simulator({
    store,
    transitions,
    courierRun,
    services: () => broker,
    scale: config.matching.simulatorTimeScale,
    intervalMs: SIMULATOR_TICK_MS,
    logger: () => logger,
  });
  const sweep = new OrderSweep({
    config: config.order,
    store,
    requests,
    transitions,
    settlement,
    announcer,
    logger: () => logger,
  });
  // In the background: what is stored without these records is missed by their readers until
  // then, but nothing refuses or doubles anything meanwhile.
  const backfills = new Backfills(
    [
      {
        what: "deliveries stored before the users' lists",
        run: (pass) => store.listStoredDeliveries(pass),
      },
      {
        what: "linked deliveries stored without their recipients' lists",
        run: (pass) => store.listLinkedDeliveries(pass),
      },
      {
        what: 'deliveries stored before the status lists',
        run: (pass) => store.listStoredStatuses(pass),
      },
      { what: 'transitions stored before their marks', run: () => store.markStoredWork() },
      {
        what: 'notifications queued before their lists',
        run: (pass) => store.listStoredNotifications(pass),
      },
      {
        what: 'notifications queued before their places',
        run: () => store.notifications.placeStoredMessages(),
      },
    ],
    config.backfillAfterRolloutMs,
  );
  const sender = new OutboxSender({
    kind: 'notification',
    config: config.notifications,
    appEnv: config.appEnv,
    store: notificationOutbox(store, proofs, transitions),
    channels: channelSenders(config.notifications, () => logger),
    logger: () => logger,
    // A proof code's or a payment link's text names the delivery by its tracking id.
    keys: TRACKING_ID_IN_TEXT,
  });

  /** A delivery the caller may read (`readableBy`) or change (`changeableBy`). */
  async function callersDelivery(
    ctx: WaybillContext<{ deliveryId: string }>,
    allowed: typeof readableBy,
  ) {
    const userId = requireUser(ctx);
    return allowed(await requests.stored(ctx.params.deliveryId, userId), userId);
  }

  const addressesOf = (deliveries: DeliveryRecord[]) =>
    store.addresses(deliveries.flatMap((d) => [d.originId, d.destinationId]));

  /** A step the courier reports, as `POST /courier/deliveries/:deliveryId/<step>`. */
  function courierStep<P extends { deliveryId: string; code?: string; reason?: string }>(
    step: CourierStep,
    params: Joi.ObjectSchema<P>,
    summary: string,
  ) {
    return action({
      // A repeat answers 409 naming the status this call moved the delivery to.
      retry: 'never',
      http: {
        group: 'courier',
        method: 'POST',
        path: `/deliveries/:deliveryId/${step}`,
        message: `Delivery ${COURIER_STEPS[step]}`,
        summary,
        response: courierDeliveryView,
        errors: {
          404: NOT_YOUR_DELIVERY,
          409: 'Not the next step for the delivery’s status (the message names it), the proof is locked, or (returned) no return code was sent to the sender yet',
          ...(params === courierCodeStepParams ? CODE_STEP_ERRORS : {}),
        },
      },
      params,
      async handler(ctx: WaybillContext<P>) {
        const courierId = requireCourier(ctx);
        const delivery = await courierRun.advance(
          courierId,
          ctx.params.deliveryId,
          step,
          ctx.params,
        );
        return toCourierDeliveryView(delivery, await addressesOf([delivery]));
      },
    });
  }

  /**
   * The deliveries as the caller sees them: a linked recipient, less their creator's own; none
   * the caller is not a party to (a list entry never names one today, and a stale one must not
   * show a stranger the creator's view).
   */
  async function callersViews(ctx: WaybillContext<unknown>, listed: DeliveryRecord[]) {
    const userId = requireUser(ctx);
    const deliveries = listed.filter((d) => roleOf(d, userId) !== null);
    const addresses = await addressesOf(deliveries);
    const services = sharedReads(ctx);
    return Promise.all(
      deliveries.map(async (d) => {
        const recipient = roleOf(d, userId) === 'RECIPIENT';
        // Not located for a recipient who no longer follows it: geo is not asked for what
        // their view drops.
        const located = recipient ? isFollowed(d.lifecycle.status) : undefined;
        const courier = await callersCourier(services, d, addresses, { located });
        const view = toDeliveryView(d, addresses, courier);
        return recipient ? recipientsView(view, new Date()) : view;
      }),
    );
  }

  return {
    name: 'order',
    mixins: [db.mixin()],
    created() {
      broker = this.broker;
      logger = this.logger;
    },
    async started() {
      registerHealthCheck(this.broker, 'order-redis', () => redisReady(redis));
      // Not awaited: without Redis the service still starts; cancellations answer 503.
      connectRedis(redis).catch(() => {
        /* reported by the client's error listener */
      });
      await backfills.start(logger);
      if (!config.background) return;
      sweep.start();
      sender.start();
      if (config.appEnv !== 'live') simulator.start();
    },
    async stopped() {
      // At once: each waits for its run under way, and together they must end within STOP_GRACE_MS.
      await Promise.allSettled([backfills.stop(), simulator.stop(), sweep.stop(), sender.stop()]);
      unregisterHealthCheck(this.broker, 'order-redis');
      redis.disconnect();
    },
    events: {
      'payment.succeeded': {
        handler: (ctx: { params: PaymentOutcome }) => outcomes.succeeded(ctx.params),
      },
      'payment.failed': {
        handler: (ctx: { params: PaymentFailure }) => outcomes.failed(ctx.params),
      },
      [COURIERS_MOVED_EVENT]: {
        handler: (ctx: { params: MatchingEvents[typeof COURIERS_MOVED_EVENT] }) =>
          announcer.locations(ctx.params.moves),
      },
      [FLEET_TYPES_CHANGED_EVENT]: {
        handler: (ctx: { params: GeoEvents[typeof FLEET_TYPES_CHANGED_EVENT] }) =>
          simulator.forgetSpeed(ctx.params.fleetTypeId),
      },
    },
    actions: {
      request: action({
        // The delivery is named after the Idempotency-Key (decision 32).
        retry: 'keyed',
        http: {
          group: 'api',
          method: 'POST',
          path: '/request',
          status: 201,
          // The P2P record's `deliveryId` (a checkout's answer has none: its `Location` does).
          creates: 'deliveryId',
          createdIdField: 'deliveryId',
          message: 'Delivery request created',
          summary: 'Order a delivery of your saved packages',
          description:
            'Takes the packages, prices them exactly as `POST /api/pricing` Mode A does, and takes the creator’s share from the wallet (`paymentMethodType` WALLET) or opens a hosted checkout (CHECKOUT: the answer is the provider’s payload; the delivery’s URL is in `Location`). A recipient’s share (RECIPIENT, SPLIT) is paid through a checkout link sent to the recipient. With an `Idempotency-Key`, a retry answers the same delivery. See docs/deliveries.md.',
          response: createdView,
          optionHeaders: [
            {
              name: SIMULATE_HEADER,
              values: SIMULATION_MODES,
              environments: ['staging'],
              description:
                'Staging only (400 in live): a virtual courier near the pickup takes the delivery and drives it to `delivered`, or `failed` half-way (the packages come back), or nobody is found (`no-courier`), at SIMULATOR_TIME_SCALE times real speed. See docs/matching.md.',
            },
          ],
          errors: {
            400: 'Invalid packages selection; origin and destination the same; invalid input; Waybill-Simulate in live; a quoteId not ours or of another account',
            404: 'Fleet type not found; Courier not found; No merchant-specific couriers found',
            409: 'The Idempotency-Key is held by a request still in progress, or its request was undone (send a new key); a COURIER_WALLET podCourierProfileId that is a user’s id; the quoteId expired, or the delivery would cost another total than it quoted (price it again)',
            422: 'Insufficient balance; a pay-on-delivery only couriers over the cash limit may carry, or a load no vehicle of the couriers named can carry (SPECIFIC, MERCHANT_SPECIAL_COURIERS); a price more than one payment can be',
          },
        },
        params: requestParams,
        async handler(ctx: WaybillContext<RequestParams>) {
          requireUser(ctx);
          // requireUser refused a call without one.
          const user = ctx.meta.user as AuthUser;
          const simulation = ctx.meta.optionHeaders?.[SIMULATE_HEADER.toLowerCase()] as
            SimulationMode | undefined;
          if (simulation && config.appEnv === 'live') {
            throw badRequest(SIMULATION_IN_LIVE, [
              { field: SIMULATE_HEADER, message: 'staging only' },
            ]);
          }
          const { delivery, addresses } = await requests.create(ctx.params, {
            user,
            apiKeyId: ctx.meta.apiKeyId ?? null,
            idempotencyToken: ctx.meta.idempotencyToken,
            simulation,
            // Calls carry the caller's meta: geo resolves saved `{id}` addresses as this user.
            caller: ctx,
          });
          ctx.meta.$location = `/api/deliveries/${delivery._id}`;
          return toCreatedView(delivery, new Map(addresses.map((a) => [a._id, a])));
        },
      }),

      cancel: action({
        // A repeat would answer 400 for the delivery this call cancelled.
        retry: 'never',
        http: {
          group: 'api',
          method: 'POST',
          path: '/request/:deliveryId/cancel',
          status: 201,
          message: 'Delivery request cancelled',
          summary: 'Cancel a delivery request before its packages are collected',
          description:
            'Allowed while the delivery is REQUEST_CREATED, COURIER_ASSIGNED or ARRIVED_AT_PICKUP, at most twice every 3 hours per account. What was paid goes back once: your share to your wallet, a recipient’s share to the recipient at the payment provider; the packages are free again.',
          response: cancelledView,
          errors: {
            400: 'The delivery cannot be cancelled in its status, or two cancels in the last 3 hours',
            403: 'The delivery is linked to your account as its recipient: only its creator cancels it',
            404: 'Delivery request not found',
            503: 'Redis, which counts cancellations, is unreachable (nothing was cancelled); or the cancel could not be confirmed (read the delivery, and send it again only if it is not CANCELLED)',
          },
        },
        params: deliveryIdParams,
        async handler(ctx) {
          const delivery = await cancellations.cancel(requireUser(ctx), ctx.params.deliveryId);
          return { delivery: { id: delivery._id } };
        },
      }),

      get: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/deliveries/:deliveryId',
          message: 'Delivery retrieved',
          summary:
            'One of your deliveries with its P2P record, addresses, proofs and steps; or one linked to your account as its recipient',
          response: deliveryView,
          errors: { 404: 'Delivery request not found' },
        },
        params: deliveryIdParams,
        async handler(ctx) {
          const [view] = await callersViews(ctx, [await callersDelivery(ctx, readableBy)]);
          return view;
        },
      }),

      list: action({
        retry: 'safe',
        http: {
          group: 'api',
          method: 'GET',
          path: '/deliveries',
          message: 'Deliveries retrieved',
          summary: 'Your deliveries, newest first (an extension of the spec)',
          description:
            'Newest first, in the order they were stored, paged with `limit` and `offset`. With `status`, the deliveries now in that status, the latest to enter it first (the most recently delivered first, for `DELIVERED`). With `role=RECIPIENT`, the deliveries others created with `link3rdPartyByContactInfo` whose recipient contact is your account’s (your e-mail, or a phone no other account has), instead of those you created.',
          response: Joi.array().items(deliveryView).max(DELIVERY_PAGE_MAX),
        },
        params: listParams,
        async handler(ctx: WaybillContext<ListParams>) {
          const userId = requireUser(ctx);
          const { status, role, ...page } = ctx.params;
          const current = (deliveryId: string) => transitions.current(deliveryId);
          let found: DeliveryRecord[];
          if (status) found = await store.listInStatus(userId, status, page, current, role);
          else {
            const ids = await store.list(userId, page, role);
            found = (await Promise.all(ids.map(current))).filter((d) => d !== null);
          }
          const views = await callersViews(ctx, found);
          return pageInOneReply(views, DELIVERIES_ALWAYS_FIT, 'deliveries');
        },
      }),

      notifications: action({
        retry: 'safe',
        http: {
          group: 'admin',
          method: 'GET',
          path: '/notifications',
          message: 'Notifications retrieved',
          summary: 'The messages a delivery sent to people (its notification outbox)',
          description:
            'Each message goes by SMS and by e-mail; one that fails is retried with a growing wait, then left FAILED with its last error. In staging the text is shown, proof codes included, so that support and test suites can see what was sent. In live the text is never shown, and is dropped once sent or failed.',
          response: Joi.array().items(notificationView),
        },
        params: notificationsParams,
        async handler(ctx) {
          const messages = await store.notificationsOf(ctx.params.deliveryId);
          return messages.map((m) => toNotificationView(m, config.appEnv !== 'live'));
        },
      }),

      issueProofCode: action({
        // Each call issues another code: a repeat would spend one of the proof's codes.
        retry: 'never',
        http: {
          group: 'api',
          method: 'POST',
          path: '/deliveries/:deliveryId/proofs/:proofId/code',
          status: 201,
          message: 'Proof code issued',
          summary: 'Issue a new proof code (an extension of the spec)',
          description:
            'The old code stops working and the count of wrong codes starts again (a proof locks after 5 wrong codes). The new code is sent to the stop’s contact by SMS and e-mail, never answered; an earlier code’s messages not sent yet are withdrawn (SUPERSEDED in GET /admin/notifications). At most 6 codes per proof.',
          response: proofView,
          errors: {
            403: 'The delivery is linked to your account as its recipient: only its creator issues codes',
            404: 'Delivery request not found; Proof not found on this delivery',
            409: 'The proof was given already, or the delivery is past the step that takes it',
          },
        },
        params: proofParams,
        async handler(ctx) {
          const delivery = await callersDelivery(ctx, changeableBy);
          const addresses = await addressesOf([delivery]);
          const proof = await proofs.issueAgain(delivery, ctx.params.proofId, addresses);
          return toProofView(proof);
        },
      }),

      currentDelivery: action({
        retry: 'safe',
        http: {
          group: 'courier',
          method: 'GET',
          path: '/deliveries/current',
          message: 'Current delivery retrieved',
          summary: 'The delivery the courier holds now, or null',
          response: courierDeliveryView.allow(null),
        },
        params: Joi.object({}),
        async handler(ctx) {
          const courierId = requireCourier(ctx);
          const held = await call(ctx, 'courier-matching.heldDelivery', { courierId });
          if (!held.deliveryId) return null;
          const delivery = await transitions.current(held.deliveryId);
          // Held still, when its end has not freed the courier yet (matching away): an ended
          // delivery's stops and contacts are no longer theirs to see.
          if (delivery?.assignment?.courierId !== courierId) return null;
          if (isTerminal(delivery.lifecycle.status)) return null;
          return toCourierDeliveryView(delivery, await addressesOf([delivery]));
        },
      }),

      arrivedAtPickup: courierStep(
        'arrived-at-pickup',
        courierStepParams,
        'You are at the pickup address',
      ),
      collected: courierStep(
        'collected',
        courierCodeStepParams,
        'You have the packages (with the sender’s collection code when the delivery asks for one)',
      ),
      inTransit: courierStep('in-transit', courierStepParams, 'You are on the way to the drop-off'),
      arrivedAtDropoff: courierStep(
        'arrived-at-dropoff',
        courierStepParams,
        'You are at the drop-off address',
      ),
      delivered: courierStep(
        'delivered',
        courierCodeStepParams,
        'Handed over (with the recipient’s delivery code when the delivery asks for one)',
      ),
      failed: courierStep(
        'failed',
        courierFailedParams,
        'The delivery cannot go on: before collection it ends; after, the packages go back',
      ),
      returned: courierStep(
        'returned',
        courierCodeStepParams,
        'The packages are back with the sender (after a failure past collection; with the sender’s return code when the delivery asks for one)',
      ),

      /** Internal: matching's courier accepted the delivery. */
      assignCourier: implement('order.assignCourier', {
        visibility: 'public',
        params: assignCourierParams,
        handler: (ctx) => courierRun.assign(ctx.params.deliveryId, ctx.params.courierId),
      }),

      /** Internal: matching found no courier in time. */
      noCourierFound: implement('order.noCourierFound', {
        visibility: 'public',
        params: matchingEndParams,
        handler: (ctx) => courierRun.noCourier(ctx.params.deliveryId),
      }),

      ...createDeliveryAdminActions({
        store,
        transitions,
        settlement,
        courierOf,
        stored: (deliveryId) => requests.stored(deliveryId),
        logger: () => logger,
      }),

      ...createTrackingActions({
        store,
        transitions,
        courierOf,
        logger: () => logger,
        scheduledSearchLeadMs: config.order.scheduledSearchLeadMs,
      }),

      /** Internal: a saved address of the user's (geo resolves `{id}` address inputs with it). */
      getAddress: implement('order.getAddress', {
        visibility: 'public',
        params: getAddressParams,
        async handler(ctx) {
          const found = await store.address(ctx.params.addressId);
          return found && found.userId === ctx.params.userId ? toAddressView(found) : null;
        },
      }),
    },
  };
}

import type { Logger, ServiceBroker } from 'moleculer';
import type { Config } from '../../libs/config';
import { call } from '../../libs/contracts';
import { publishParams, takingLocationsParams } from '../../libs/contracts/webhook';
import { channelSenders } from '../../libs/messaging/channels';
import { OutboxSender } from '../../libs/messaging/outbox-sender';
import { Backfills } from '../../libs/backfills';
import { metricTableOf, type MetricTable } from '../../libs/metric-table';
import { ServiceDatabase } from '../../libs/mongo';
import { implement, type ServiceDefinition } from '../../libs/service';
import { Dispatcher } from './dispatcher';
import { OwnerLookups } from '../../libs/owner-lookups';
import { createEndpointActions } from './endpoints';
import { fanOut, takingLocations } from './fan-out';
import { DisableNotices } from './notices';
import { RETIRED_KINDS, RetentionSweep } from './retention';
import { SecretBox } from '../../libs/secret-box';
import { WebhookStore, defineWebhookModels } from './store';

/** Counts what retention deleted, per kind (docs/operations.md). */
export const RETENTION_METRIC = 'waybill_webhook_retention_deleted_total';

/**
 * Integrators' webhooks: endpoints, the events of their deliveries queued for them, the
 * dispatcher that sends them signed, in order, with retries, and the e-mail that tells an
 * owner their endpoint was disabled (docs/webhooks.md).
 */
export function createWebhookService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'webhook', defineWebhookModels);
  let logger: Logger | undefined;
  const store = new WebhookStore(
    () => db.models,
    (message, meta) => logger?.warn(message, meta),
  );
  const box = new SecretBox(config.webhook.secretKey);
  let retentionDeleted: ReturnType<MetricTable['counter']> | undefined;
  let broker: ServiceBroker | undefined;
  const log = () => logger as Logger;
  const notices = new DisableNotices({
    store,
    publicBaseUrl: config.notifications.publicBaseUrl,
    ownerEmail: async (userId) => {
      try {
        return (await call(broker as ServiceBroker, 'account.getUser', { userId })).email;
      } catch (err) {
        // The account is gone: nobody to tell (the sender records the notice FAILED).
        if ((err as { type?: unknown }).type === 'NOT_FOUND') return '';
        throw err;
      }
    },
    logger: log,
  });
  // One line of host-name lookups per owner in this process, registrations and sends alike.
  const lookups = new OwnerLookups(config.webhook.timeoutMs);
  const dispatcher = new Dispatcher({
    store,
    config: config.webhook,
    appEnv: config.appEnv,
    box,
    lookups,
    logger: log,
    recordDisable: (endpoint, at, lastError) => notices.record(endpoint, at, lastError),
  });
  const backfills = new Backfills(
    [
      // Awaited: until they are done a stored endpoint would miss the events of its owner and
      // let more than WEBHOOK_MAX_ENDPOINTS be created, and a page of messages would leave out
      // the older ones and list them later above newer ones.
      {
        what: "endpoints stored before their owners' lists",
        run: (pass) => store.listStoredEndpoints(pass),
        awaited: true,
      },
      {
        what: "messages stored before their endpoints' lists",
        run: (pass) => store.listStoredMessages(pass),
        awaited: true,
      },
      // In the background: notices queued before their places wait until then.
      {
        what: 'notices queued before their places',
        run: () => store.notices.placeStoredMessages(),
      },
    ],
    config.backfillAfterRolloutMs,
  );
  const retention = new RetentionSweep({
    store,
    retentionMs: config.webhook.retentionMs,
    intervalMs: config.webhook.retentionIntervalMs,
    environment: config.appEnv,
    logger: log,
    counted: (deleted) => {
      for (const kind of RETIRED_KINDS) {
        if (retentionDeleted) retentionDeleted.of(kind).value += deleted[kind];
      }
    },
  });
  const sender = new OutboxSender({
    kind: 'webhook notice',
    config: config.notifications,
    appEnv: config.appEnv,
    store: notices.outbox(),
    channels: channelSenders(config.notifications, log),
    logger: log,
  });

  return {
    name: 'webhook',
    mixins: [db.mixin()],
    actions: {
      ...createEndpointActions({
        store,
        config: config.webhook,
        appEnv: config.appEnv,
        box,
        lookups,
      }),

      /** Internal: order's events of a delivery, queued for the owner's endpoints. */
      publish: implement('webhook.publish', {
        visibility: 'public',
        params: publishParams,
        handler: async (ctx) => ({
          queued: await fanOut(store, ctx.params.events, config.appEnv, new Date()),
        }),
      }),

      /** Internal: which of these users take couriers' positions now. */
      takingLocations: implement('webhook.takingLocations', {
        visibility: 'public',
        params: takingLocationsParams,
        handler: async (ctx) => ({
          userIds: await takingLocations(store, ctx.params.userIds, config.appEnv),
        }),
      }),
    },
    created() {
      logger = this.logger;
      broker = this.broker;
      if (this.broker.isMetricsEnabled()) {
        retentionDeleted = metricTableOf(this.broker).counter(
          RETENTION_METRIC,
          'Webhook records deleted by the retention sweep (WEBHOOK_RETENTION_DAYS), by kind',
          ['kind'],
        );
        for (const kind of RETIRED_KINDS) retentionDeleted.of(kind);
      }
    },
    async started() {
      await backfills.start(this.logger);
      if (!config.background) return;
      dispatcher.start();
      sender.start();
      retention.start();
    },
    async stopped() {
      await Promise.all([dispatcher.stop(), sender.stop(), retention.stop(), backfills.stop()]);
    },
  };
}

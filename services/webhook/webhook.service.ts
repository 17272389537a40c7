import type { Logger } from 'moleculer';
import type { Config } from '../../libs/config';
import { publishParams } from '../../libs/contracts/webhook';
import { ServiceDatabase } from '../../libs/mongo';
import { implement, type ServiceDefinition } from '../../libs/service';
import { Dispatcher } from './dispatcher';
import { createEndpointActions } from './endpoints';
import { fanOut } from './fan-out';
import { SecretBox } from './secret-box';
import { WebhookStore, defineWebhookModels } from './store';

/**
 * Integrators' webhooks: endpoints, the events of their deliveries queued for them, and the
 * dispatcher that sends them signed, in order, with retries (docs/webhooks.md).
 */
export function createWebhookService(config: Config): ServiceDefinition {
  const db = new ServiceDatabase(config, 'webhook', defineWebhookModels);
  const store = new WebhookStore(() => db.models);
  const box = new SecretBox(config.webhook.secretKey);
  let logger: Logger | undefined;
  const log = () => logger as Logger;
  const dispatcher = new Dispatcher({
    store,
    config: config.webhook,
    appEnv: config.appEnv,
    box,
    logger: log,
    onDisabled: async (endpoint, reason) => {
      log().warn('webhook endpoint disabled', {
        webhookId: endpoint._id,
        userId: endpoint.userId,
        url: endpoint.url,
        reason,
      });
    },
  });

  return {
    name: 'webhook',
    mixins: [db.mixin()],
    actions: {
      ...createEndpointActions({ store, config: config.webhook, appEnv: config.appEnv, box }),

      /** Internal: order's events of a delivery, queued for the owner's endpoints. */
      publish: implement('webhook.publish', {
        visibility: 'public',
        params: publishParams,
        handler: async (ctx) => ({
          queued: await fanOut(store, ctx.params.events, config.appEnv, new Date()),
        }),
      }),
    },
    created() {
      logger = this.logger;
    },
    started() {
      dispatcher.start();
    },
    async stopped() {
      await dispatcher.stop();
    },
  };
}

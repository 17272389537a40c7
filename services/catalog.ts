import type { Config, ServiceName } from '../libs/config';
import type { ServiceDefinition } from '../libs/service';
import type * as AccountService from './account/account.service';
import type * as CourierMatchingService from './courier-matching/courier-matching.service';
import type * as FileService from './file/file.service';
import type * as GatewayService from './gateway/gateway.service';
import type * as GeoService from './geo/geo.service';
import type * as OrderService from './order/order.service';
import type * as PackageService from './package/package.service';
import type * as PaymentService from './payment/payment.service';
import type * as PricingService from './pricing/pricing.service';
import type * as WebhookService from './webhook/webhook.service';

type BackendName = Exclude<ServiceName, 'gateway'>;
type ServiceFactory = (config: Config) => ServiceDefinition;

/*
 * Each service's code is loaded only by a process that runs it, or that runs the gateway
 * (which builds every route and the OpenAPI document): a pricing process never loads geo's
 * gazetteer or h3-js, nor moleculer-web. `require` is the synchronous lazy load CommonJS offers.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const LOADERS: Record<BackendName, () => ServiceFactory> = {
  account: () =>
    (require('./account/account.service') as typeof AccountService).createAccountService,
  geo: () => (require('./geo/geo.service') as typeof GeoService).createGeoService,
  pricing: () =>
    (require('./pricing/pricing.service') as typeof PricingService).createPricingService,
  package: () =>
    (require('./package/package.service') as typeof PackageService).createPackageService,
  file: () => (require('./file/file.service') as typeof FileService).createFileService,
  payment: () =>
    (require('./payment/payment.service') as typeof PaymentService).createPaymentService,
  order: () => (require('./order/order.service') as typeof OrderService).createOrderService,
  'courier-matching': () =>
    (require('./courier-matching/courier-matching.service') as typeof CourierMatchingService)
      .createCourierMatchingService,
  webhook: () =>
    (require('./webhook/webhook.service') as typeof WebhookService).createWebhookService,
};
const loadGateway = () =>
  (require('./gateway/gateway.service') as typeof GatewayService).createGatewayService;
/* eslint-enable @typescript-eslint/no-require-imports */

/** One service's definition, loading only its code. */
export function serviceDefinition(name: ServiceName, config: Config): ServiceDefinition {
  return name === 'gateway'
    ? loadGateway()(config, backendDefinitions(config))
    : LOADERS[name]()(config);
}

/**
 * Every service behind the gateway. The gateway builds its routes and the OpenAPI document
 * from these, so a new action with `http` is served and documented as is.
 */
export function backendDefinitions(config: Config): ServiceDefinition[] {
  return (Object.keys(LOADERS) as BackendName[]).map((name) => LOADERS[name]()(config));
}

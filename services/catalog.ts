import type { Config, ServiceName } from '../libs/config';
import type { ServiceDefinition } from '../libs/service';
import type * as AccountService from './account/account.service';
import type * as GeoService from './geo/geo.service';
import type * as PricingService from './pricing/pricing.service';
import type * as PackageService from './package/package.service';
import type * as FileService from './file/file.service';

type BackendName = Exclude<ServiceName, 'gateway'>;
type ServiceFactory = (config: Config) => ServiceDefinition;

/*
 * Each service's code is loaded only by a process that runs it, or that runs the gateway
 * (which builds every route and the OpenAPI document): a pricing process never loads geo's
 * gazetteer or h3-js. `require` is the synchronous lazy load CommonJS offers.
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
};
/* eslint-enable @typescript-eslint/no-require-imports */

/**
 * Every service behind the gateway. The gateway builds its routes and the OpenAPI document
 * from this list, so a new action with `http` is served and documented as is.
 */
export const BACKEND_NAMES = Object.keys(LOADERS) as BackendName[];

export function backendDefinition(name: BackendName, config: Config): ServiceDefinition {
  return LOADERS[name]()(config);
}

export function backendDefinitions(config: Config): ServiceDefinition[] {
  return BACKEND_NAMES.map((name) => backendDefinition(name, config));
}

import type { Config, ServiceName } from '../libs/config';
import type { ServiceDefinition } from '../libs/service';
import { createAccountService } from './account/account.service';
import { createFileService } from './file/file.service';
import { createGeoService } from './geo/geo.service';
import { createPackageService } from './package/package.service';
import { createPricingService } from './pricing/pricing.service';

/**
 * Every service behind the gateway. The gateway builds its routes and the OpenAPI
 * document from this list, so a new action with `http` is served and documented as is.
 */
export const BACKEND_SERVICES: Record<
  Exclude<ServiceName, 'gateway'>,
  (c: Config) => ServiceDefinition
> = {
  account: createAccountService,
  geo: createGeoService,
  pricing: createPricingService,
  package: createPackageService,
  file: createFileService,
};

export function backendDefinitions(config: Config): ServiceDefinition[] {
  return Object.values(BACKEND_SERVICES).map((create) => create(config));
}

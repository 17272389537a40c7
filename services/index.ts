import type { ServiceSchema } from 'moleculer';
import type { Config } from '../libs/config';
import { toServiceSchema } from '../libs/service';
import { backendDefinition, backendDefinitions } from './catalog';
import type * as GatewayService from './gateway/gateway.service';

/** The gateway's code (moleculer-web, the OpenAPI builder) is loaded only where it runs. */
function createGateway(config: Config) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createGatewayService } = require('./gateway/gateway.service') as typeof GatewayService;
  return createGatewayService(config, backendDefinitions(config));
}

/** The moleculer schemas of the services named in the configuration (`SERVICES`). */
export function createServices(config: Config): ServiceSchema[] {
  return config.services.map((name) =>
    toServiceSchema(name === 'gateway' ? createGateway(config) : backendDefinition(name, config)),
  );
}

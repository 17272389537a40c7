import type { ServiceSchema } from 'moleculer';
import type { Config } from '../libs/config';
import { toServiceSchema } from '../libs/service';
import { BACKEND_SERVICES, backendDefinitions } from './catalog';
import { createGatewayService } from './gateway/gateway.service';

/** The moleculer schemas of the services named in the configuration (`SERVICES`). */
export function createServices(config: Config): ServiceSchema[] {
  return config.services.map((name) =>
    toServiceSchema(
      name === 'gateway'
        ? createGatewayService(config, backendDefinitions(config))
        : BACKEND_SERVICES[name](config),
    ),
  );
}

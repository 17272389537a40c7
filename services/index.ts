import type { ServiceSchema } from 'moleculer';
import type { Config } from '../libs/config';
import { toServiceSchema } from '../libs/service';
import { serviceDefinition } from './catalog';

/** The moleculer schemas of the services named in the configuration (`SERVICES`). */
export function createServices(config: Config): ServiceSchema[] {
  return config.services.map((name) => toServiceSchema(serviceDefinition(name, config)));
}

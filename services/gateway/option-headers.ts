import { badRequest } from '../../libs/errors';
import type { HttpRoute } from '../../libs/service';
import type { GatewayRequest } from './http';

/**
 * The route's option headers the request sent, checked against their allowed values (400
 * naming them otherwise); undefined when the route has none or none was sent.
 */
export function readOptionHeaders(
  http: Pick<HttpRoute, 'optionHeaders'> | undefined,
  headers: GatewayRequest['headers'],
): Record<string, string> | undefined {
  let found: Record<string, string> | undefined;
  for (const option of http?.optionHeaders ?? []) {
    const key = option.name.toLowerCase();
    const sent = headers[key];
    if (sent === undefined) continue;
    const value = Array.isArray(sent) ? sent.join(',') : sent.trim();
    if (!option.values.includes(value)) {
      const allowed = option.values.join(', ');
      throw badRequest(`${option.name} must be one of ${allowed}`, [
        { field: option.name, message: `one of ${allowed}` },
      ]);
    }
    found = { ...found, [key]: value };
  }
  return found;
}

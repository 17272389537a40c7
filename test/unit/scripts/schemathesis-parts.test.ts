import { loadConfig } from '../../../libs/config';
import {
  operationNames,
  sharePatterns,
  type OpenApiPaths,
} from '../../../scripts/lib/schemathesis-parts';
import { backendDefinitions } from '../../../services/catalog';
import { buildOpenApi } from '../../../services/gateway/openapi';

/**
 * scripts/schemathesis runs the generated requests in two processes at once, each given its
 * share of the operations as a pattern of names: an operation in no share would go untested,
 * one in two would be tested twice.
 */
const served = buildOpenApi(backendDefinitions(loadConfig({})), '1.0.0') as unknown as OpenApiPaths;
const names = operationNames(served);

it('names every operation of the served document as schemathesis does, once', () => {
  const count = Object.values(served.paths).reduce(
    (sum, item) => sum + Object.keys(item).filter((key) => key !== 'parameters').length,
    0,
  );
  expect(names).toHaveLength(count);
  expect(new Set(names).size).toBe(count);
  expect(names).toContain('GET /api/wallet');
  expect(names).toContain('GET /api/deliveries/{deliveryId}');
});

it.each([1, 2, 3])('deals the operations into %i shares matching each exactly once', (parts) => {
  const patterns = sharePatterns(names, parts).map((pattern) => new RegExp(pattern));
  for (const name of names) {
    expect(patterns.filter((pattern) => pattern.test(name))).toHaveLength(1);
  }
  const sizes = patterns.map((pattern) => names.filter((name) => pattern.test(name)).length);
  expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
});

it('matches a name alone, not a longer one or one that only looks like it', () => {
  const [pattern] = sharePatterns(['GET /api/deliveries/{deliveryId}', 'GET /api/x.y'], 1);
  const matches = (name: string) => new RegExp(pattern).test(name);
  expect(matches('GET /api/deliveries/{deliveryId}')).toBe(true);
  expect(matches('GET /api/deliveries/{deliveryId}/events')).toBe(false);
  expect(matches('POST /api/deliveries/{deliveryId}')).toBe(false);
  expect(matches('GET /api/xzy')).toBe(false);
});

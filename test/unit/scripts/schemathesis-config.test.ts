import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../libs/config';
import { backendDefinitions } from '../../../services/catalog';
import { buildOpenApi } from '../../../services/gateway/openapi';

/**
 * tools/schemathesis lets some operations answer 400 to a body the document allows, because
 * their data decides (`expected-statuses`); the hooks' check `refused_only_for_data` then holds
 * each of them to the messages of those refusals (`DATA_REFUSALS`), so that any other 400 (a
 * rule the document does not state) still fails the run. An operation allowed 400 without an
 * entry there would pass every 400 silently.
 */
const TOOLS = join(__dirname, '..', '..', '..', 'tools', 'schemathesis');
const toml = readFileSync(join(TOOLS, 'schemathesis.toml'), 'utf8');
const hooks = readFileSync(join(TOOLS, 'hooks.py'), 'utf8');

/**
 * Allowed 400 with no refusals to hold them to, and why: nothing of their body's shape is left
 * to a message that could tell shape from data.
 */
const UNHELD: Record<string, string> = {
  'pricing.putTier': 'the tiers merged from country to city decide whether rates are consistent',
  'file.singleUpload': 'the bytes decide',
  'file.bulkUpload': 'the bytes decide',
};

/** The operation ids of each `[[operations]]` block that allows 400 to schema-valid data. */
function allowed400(): string[] {
  return toml
    .split('[[operations]]')
    .slice(1)
    .filter((block) => /positive_data_acceptance\.expected-statuses = \[[^\]]*"400"/.test(block))
    .flatMap((block) => {
      const ids = /include-operation-id = (\[[^\]]*\]|"[^"]*")/.exec(block)?.[1] ?? '[]';
      return JSON.parse(ids.startsWith('[') ? ids : `[${ids}]`) as string[];
    });
}

/** `DATA_REFUSALS`' keys: schemathesis's operation labels, `POST /api/request`. */
function heldLabels(): string[] {
  const table = hooks.slice(hooks.indexOf('DATA_REFUSALS = {'));
  const body = table.slice(0, table.indexOf('\n}'));
  return [...body.matchAll(/^ {4}"([A-Z]+ [^"]+)":/gm)].map((m) => m[1]);
}

describe('the schemathesis configuration', () => {
  const doc = buildOpenApi(backendDefinitions(loadConfig({})), '1.0.0');
  const labels = new Map<string, string>();
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations as Record<string, object>)) {
      const id = (operation as { operationId?: string }).operationId;
      if (id) labels.set(id, `${method.toUpperCase()} ${path}`);
    }
  }

  it('holds every operation it lets answer 400 to valid data to the data’s refusals', () => {
    const operations = allowed400();
    expect(operations).toEqual(expect.arrayContaining(['geo.route', 'pricing.price']));
    const held = new Set(heldLabels());
    const unheld = operations.filter((id) => !(id in UNHELD) && !held.has(labels.get(id) ?? id));
    expect(unheld).toEqual([]);
  });

  it('names real operations, each held or excused once', () => {
    const held = heldLabels();
    expect(held.length).toBeGreaterThan(0);
    expect(held.filter((label) => ![...labels.values()].includes(label))).toEqual([]);
    expect(Object.keys(UNHELD).filter((id) => !labels.has(id))).toEqual([]);
    expect(
      allowed400().filter((id) => id in UNHELD && held.includes(labels.get(id) ?? '')),
    ).toEqual([]);
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../libs/config';
import type { Retry } from '../../../libs/contracts';
import { backendDefinitions, serviceDefinition } from '../../../services/catalog';

const doc = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'resilience.md'), 'utf8');
const KINDS: Retry[] = ['safe', 'keyed', 'never'];

/** The table of docs/resilience.md: per service, the actions listed under each kind. */
function documented(): Map<string, Retry> {
  const rows = doc.split('\n').filter((line) => /^\| `[a-z-]+` +\|/.test(line));
  const byAction = new Map<string, Retry>();
  for (const row of rows) {
    const [service, ...cells] = row
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim());
    cells.forEach((cell, i) => {
      for (const [, action] of cell.matchAll(/`([A-Za-z]+)`/g)) {
        byAction.set(`${service.replaceAll('`', '')}.${action}`, KINDS[i]);
      }
    });
  }
  return byAction;
}

describe('docs/resilience.md', () => {
  it('lists every action of every service under the retry kind it declares', () => {
    const config = loadConfig({});
    const declared = new Map<string, Retry>();
    for (const definition of [
      ...backendDefinitions(config),
      serviceDefinition('gateway', config),
    ]) {
      for (const [name, action] of Object.entries(definition.actions ?? {})) {
        declared.set(`${definition.name}.${name}`, action.retry);
      }
    }
    expect(Object.fromEntries(documented())).toEqual(Object.fromEntries(declared));
  });
});

import { join } from 'node:path';
import { CLI_VARIABLES } from '../../../bin/cli-services';
import { describeConfig } from '../../../libs/config';
import { ROOT, runTypeScript } from '../../support/node-run';

const CLI = join(ROOT, 'bin', 'waybill.ts');

describe('waybill --help', () => {
  it('names only variables the config or the CLI reads, and none required that has a default', async () => {
    const help = await runTypeScript(CLI, ['--help']);
    expect(help.code).toBe(0);
    const defaults = new Map(describeConfig().map((v) => [v.name, v.default]));
    const named = [...help.stdout.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)].map((m) => m[0]);
    expect(named.length).toBeGreaterThan(0);
    const own = new Set<string>(Object.values(CLI_VARIABLES));
    expect(named.filter((name) => !defaults.has(name) && !own.has(name))).toEqual([]);
    const required = [...help.stdout.matchAll(/\b([A-Z0-9_]+) (?:is|are) required/g)];
    expect(required.map((m) => m[1]).filter((name) => defaults.get(name))).toEqual([]);
  }, 30_000);
});

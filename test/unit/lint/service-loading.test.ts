import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');

/** Project modules and packages a fresh process has loaded after building `services`. */
function modulesLoadedFor(services: string): string[] {
  const script = `
    const { loadConfig } = require('./libs/config');
    const { createServices } = require('./services');
    createServices(loadConfig({ SERVICES: ${JSON.stringify(services)} }));
    console.log(JSON.stringify(Object.keys(require.cache)));
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(run.stderr);
  return (JSON.parse(run.stdout) as string[]).map((file) => file.slice(ROOT.length + 1));
}

describe('a process loads the code of the services it runs, and no other', () => {
  it('pricing alone: no geo code, no h3-js, no gateway', () => {
    const loaded = modulesLoadedFor('pricing');
    expect(loaded).toContain('services/pricing/pricing.service.ts');
    expect(loaded.filter((f) => /^services\/(?!pricing\/|index\.ts|catalog\.ts)/.test(f))).toEqual(
      [],
    );
    expect(loaded.filter((f) => f.includes('node_modules/h3-js/'))).toEqual([]);
  });

  it('the gateway: every service, for its routes and the OpenAPI document', () => {
    const loaded = modulesLoadedFor('gateway');
    for (const service of [
      'account',
      'geo',
      'pricing',
      'package',
      'file',
      'payment',
      'courier-matching',
    ]) {
      expect(loaded).toContain(`services/${service}/${service}.service.ts`);
    }
  });
});

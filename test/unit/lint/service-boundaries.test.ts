import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const ESLINT = join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

/** Lints `code` as if it were the file at `filePath`; the messages of its problems. */
function lint(filePath: string, code: string): string[] {
  const run = spawnSync(
    process.execPath,
    [ESLINT, '--format', 'json', '--stdin', '--stdin-filename', filePath],
    { cwd: ROOT, input: code, encoding: 'utf8' },
  );
  const [result] = JSON.parse(run.stdout) as { messages: { ruleId: string; message: string }[] }[];
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('service boundaries (eslint)', () => {
  it('refuses a service importing another service', () => {
    const problems = lint(
      'services/pricing/probe.ts',
      "import { foldName } from '../geo/gazetteer';\nexport const f = foldName;\n",
    );
    expect(problems).toEqual([expect.stringMatching(/^no-restricted-imports: .*libs\/contracts/)]);
  });

  it('refuses it from a nested folder too, and refuses the catalog', () => {
    const boundary = [expect.stringMatching(/^no-restricted-imports: .*libs\/contracts/)];
    expect(
      lint(
        'services/geo/gazetteer/probe.ts',
        "import { quote } from '../../pricing/quote';\nexport const q = quote;\n",
      ),
    ).toEqual(boundary);
    expect(
      lint(
        'services/package/probe.ts',
        "import { backendDefinitions } from '../catalog';\nexport const b = backendDefinitions;\n",
      ),
    ).toEqual(boundary);
  });

  it('refuses joi itself everywhere but libs/joi.ts, whose strings count characters', () => {
    const code = "import Joi from 'joi';\nexport const s = Joi.string();\n";
    const oneJoi = [expect.stringMatching(/^no-restricted-imports: .*libs\/joi/)];
    for (const file of ['services/geo/probe.ts', 'libs/probe.ts', 'test/unit/probe.test.ts']) {
      expect(lint(file, code)).toEqual(oneJoi);
    }
    expect(lint('libs/joi.ts', code)).toEqual([]);
  });

  it('refuses libs/ importing a service', () => {
    expect(
      lint(
        'libs/probe.ts',
        "import { quote } from '../services/pricing/quote';\nexport const q = quote;\n",
      ),
    ).toEqual([expect.stringMatching(/^no-restricted-imports: .*libs\/ is shared/)]);
  });

  it('allows a service its own modules, libs and the contracts', () => {
    expect(
      lint(
        'services/geo/gazetteer/probe.ts',
        [
          "import { compact } from '../views';",
          "import { foldName } from '../../../libs/text';",
          "import { call } from '../../../libs/contracts';",
          'export const all = [compact, foldName, call];',
          '',
        ].join('\n'),
      ),
    ).toEqual([]);
  });

  it('allows the catalog to know every service', () => {
    expect(
      lint(
        'services/catalog.ts',
        "import { createGeoService } from './geo/geo.service';\nexport const g = createGeoService;\n",
      ),
    ).toEqual([]);
  });
});

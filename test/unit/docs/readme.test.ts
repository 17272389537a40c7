import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_VARIABLE_MEANINGS } from '../../../bin/cli-services';
import { describeConfig } from '../../../libs/config';

const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');

describe('README configuration table', () => {
  it.each(describeConfig().map((v) => [v.name, v]))(
    'documents %s with its default and meaning',
    (_name, v) => {
      const row = readme
        .split('\n')
        .find((line) => new RegExp(`^\\|\\s*\`${v.name}\`\\s*\\|`).test(line));
      expect(row).toBeDefined();
      const cells = (row ?? '').split(/(?<!\\)\|/).map((c) => c.trim());
      expect(cells[2]).toBe(v.default ? `\`${v.default}\`` : '—');
      // The table is what `waybill config` prints: a new service or limit changes both.
      expect(cells[3].replaceAll('\\|', '|')).toBe(v.description);
    },
  );

  it.each(Object.entries(CLI_VARIABLE_MEANINGS))(
    'documents %s, which the CLI alone reads, with its meaning',
    (name, meaning) => {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${name}\``));
      expect(row?.split('|')[2].trim()).toBe(meaning);
    },
  );

  it('names the two commands, and CI runs the test one', () => {
    expect(readme).toMatch(/npm run platform/);
    expect(readme).toMatch(/npm test/);
    expect(readFileSync(join(__dirname, '..', '..', '..', '.ci', 'run'), 'utf8')).toMatch(
      /^exec npm test$/m,
    );
  });
});

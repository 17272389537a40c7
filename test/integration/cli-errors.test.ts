import { join } from 'node:path';
import { ROOT, runTypeScript } from '../support/node-run';
import { isolation } from '../support/stack';

const CLI = join(ROOT, 'bin', 'waybill.ts');

/**
 * What the operator CLI says when the database refuses it: the CLI logs nothing, so its one line
 * is all an operator gets.
 */
describe('waybill and a database that refuses it', () => {
  it('says what the database said (without the password), not that a failure was logged', async () => {
    const url = new URL(process.env.MONGO_URL as string);
    url.username = 'nobody';
    url.password = 'wrong-s3cret';
    const run = await runTypeScript(CLI, ['users:find'], {
      env: {
        ...process.env,
        MONGO_URL: url.toString(),
        MONGO_DB_PREFIX: isolation().dbPrefix,
        MONGO_TIMEOUT_MS: '2000',
        LOG_LEVEL: 'fatal',
      },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      new RegExp(`^waybill: MongoDB at ${url.host} \\(database \\w+\\): `),
    );
    expect(run.stderr).not.toMatch(/logged|wrong-s3cret|\n\s+at /);
  }, 60_000);
});

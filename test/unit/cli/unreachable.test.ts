import { join } from 'node:path';
import { NO_SERVERS, ROOT, runTypeScript } from '../../support/node-run';

const CLI = join(ROOT, 'bin', 'waybill.ts');

/** The services would wait for these servers for ever; credentials that must not be shown. */
const NOWHERE = { ...NO_SERVERS, MONGO_URL: 'mongodb://operator:s3cret@127.0.0.1:9/waybill' };

describe('waybill against servers that do not answer', () => {
  it('gives up after MONGO_TIMEOUT_MS and a few seconds, naming the server and the variable, without its password', async () => {
    const run = await runTypeScript(CLI, ['users:find'], { env: NOWHERE });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      /^waybill: the services did not start within \d+ s: MongoDB at 127\.0\.0\.1:9 \(MONGO_URL\) does not answer/,
    );
    expect(run.stderr).not.toMatch(/s3cret|\n\s+at /);
  }, 30_000);

  it('names NATS too when NATS_URL is set', async () => {
    const run = await runTypeScript(CLI, ['users:find'], {
      env: { ...NOWHERE, NATS_URL: 'nats://127.0.0.1:9' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/NATS at nats:\/\/127\.0\.0\.1:9 \(NATS_URL\)/);
  }, 30_000);

  it('names NATS alone for a command that acts through the running platform', async () => {
    const run = await runTypeScript(CLI, ['deliveries', 'show', 'd-1'], {
      env: { ...NOWHERE, NATS_URL: 'nats://operator:s3cret@127.0.0.1:9' },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^waybill: the services did not start within 10 s: NATS at nats:\/\/127\.0\.0\.1:9 \(NATS_URL\) does not answer/,
    );
    expect(run.stderr).not.toMatch(/MongoDB|s3cret/);
  }, 30_000);
});

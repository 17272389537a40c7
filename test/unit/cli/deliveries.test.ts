import { join } from 'node:path';
import { NO_SERVERS, ROOT, runTypeScript } from '../../support/node-run';

const CLI = join(ROOT, 'bin', 'waybill.ts');
const DELIVERY = '4b0e8d3c-2f1a-4c5b-9d8e-7f6a5b4c3d2e';

/** No NATS_URL, and no server answers: nothing is reached by mistake. */
const run = (...args: string[]) => runTypeScript(CLI, args, { env: NO_SERVERS });

describe('waybill deliveries', () => {
  it('lists its commands and their options in --help', async () => {
    const top = await run('--help');
    expect(top.stdout).toMatch(/deliveries/);
    const help = await run('deliveries', '--help');
    expect(help.code).toBe(0);
    for (const command of [
      'show <deliveryId>',
      'fail [options] <deliveryId>',
      'returned <deliveryId>',
    ]) {
      expect(help.stdout).toContain(command);
    }
    const fail = await run('deliveries', 'fail', '--help');
    expect(fail.code).toBe(0);
    expect(fail.stdout).toMatch(/--reason <text>/);
    expect(fail.stdout).toMatch(/--expected-status <status>[\s\S]*"ARRIVED_AT_DROPOFF"/);
  }, 30_000);

  it('says what is missing or wrong before it reaches anything, and exits 1', async () => {
    const noReason = await run('deliveries', 'fail', DELIVERY, '--expected-status', 'IN_TRANSIT');
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toMatch(/required option '--reason <text>' not specified/);
    const badStatus = await run(
      'deliveries',
      'fail',
      DELIVERY,
      '--reason',
      'Lost phone',
      '--expected-status',
      'LOST',
    );
    expect(badStatus.code).toBe(1);
    expect(badStatus.stderr).toMatch(
      /argument 'LOST' is invalid. Allowed choices are REQUEST_CREATED/,
    );
  }, 30_000);

  it('asks for NATS_URL: it acts through the running platform', async () => {
    const shown = await run('deliveries', 'show', DELIVERY);
    expect(shown.code).toBe(1);
    expect(shown.stdout).toBe('');
    expect(shown.stderr).toBe(
      "waybill: this command acts through the running platform's order service: set NATS_URL to the platform's NATS, and NAMESPACE to its namespace\n",
    );
  }, 30_000);
});

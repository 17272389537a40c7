import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { dropDatabases, isolation } from '../support/stack';

/**
 * The operator CLI against the real database: it runs the services it needs in its own
 * broker, so no platform process is started here.
 */
const iso = isolation();
const CLI = join(__dirname, '..', '..', 'bin', 'waybill.ts');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(...args: string[]): Promise<Run> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NAMESPACE: iso.namespace,
    MONGO_DB_PREFIX: iso.dbPrefix,
    LOG_LEVEL: 'warn',
  };
  delete env.NATS_URL; // on its own: nothing else runs in this isolation
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', CLI, ...args],
      { env, cwd: join(__dirname, '..', '..') },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const failed = err as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

afterAll(() => dropDatabases(iso));

describe('waybill CLI: wallets', () => {
  let demoUserId: string;

  it('lists the wallet and ledger commands in --help', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/wallet/);
    expect(help.stdout).toMatch(/ledger/);
    const wallet = await cli('wallet', '--help');
    expect(wallet.stdout).toMatch(/credit \[options\] <userId>/);
    expect(wallet.stdout).toMatch(/show <userId>/);
  });

  it('seeds the demo merchant with a funded wallet, once however often it runs', async () => {
    const first = await cli('seed');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/Demo wallet: NGN 100000\.00/);
    demoUserId = /\(id ([0-9a-f-]{36})\)/.exec(first.stdout)?.[1] as string;
    const second = await cli('seed');
    expect(second.stdout).toMatch(/Demo wallet: NGN 100000\.00/);
    expect(second.stdout).toMatch(/already has a staging API key/);
  }, 60_000);

  it('credits once per reference, shows the wallet and reconciles the ledger', async () => {
    for (let i = 0; i < 2; i++) {
      const credited = await cli(
        'wallet',
        'credit',
        demoUserId,
        '--amount',
        '250.5',
        '--reference',
        'cli-1',
      );
      expect(credited.code).toBe(0);
      expect(JSON.parse(credited.stdout)).toMatchObject({ balance: '100250.50', currency: 'NGN' });
    }
    const shown = await cli('wallet', 'show', demoUserId);
    expect(JSON.parse(shown.stdout)).toMatchObject({ userId: demoUserId, balance: '100250.50' });
    const verified = await cli('ledger', 'verify');
    expect(verified.code).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ clean: true, wallets: 1, entries: 2 });
  }, 60_000);

  it('says what is wrong with a bad amount or an unknown user, and exits 1', async () => {
    const tooPrecise = await cli(
      'wallet',
      'credit',
      demoUserId,
      '--amount',
      '1.005',
      '--reference',
      'x',
    );
    expect(tooPrecise.code).toBe(1);
    expect(tooPrecise.stderr).toMatch(/amount.*at most 2 decimal places/);
    const unknown = await cli('wallet', 'show', '4b0e8d3c-2f1a-4c5b-9d8e-7f6a5b4c3d2e');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/not found/);
  }, 60_000);
});

import { join } from 'node:path';
import type { ServiceBroker } from 'moleculer';
import { conflict, serviceUnavailable } from '../../../libs/errors';
import { demoUser } from '../../../services/seed';
import { NO_SERVERS, ROOT, runTypeScript } from '../../support/node-run';

const CLI = join(ROOT, 'bin', 'waybill.ts');

/** A live configuration that loads, its servers where nothing answers. */
const LIVE: NodeJS.ProcessEnv = {
  // Were the seed to start its services, it would find no database rather than a real one.
  ...NO_SERVERS,
  APP_ENV: 'live',
  PUBLIC_BASE_URL: 'https://api.waybill.example',
  ADMIN_TOKEN: 'an-admin-token-of-32-characters!',
  PROOF_CODE_SECRET: 'a-proof-code-key-of-32-characters',
  WEBHOOK_SECRET_KEY: 'a-webhook-secret-key-of-32-characters',
  PAYSTACK_SECRET_KEY: 'sk_live_x',
  SMTP_URL: 'smtps://mailer:secret@smtp.example.com:465',
  MAIL_FROM: 'Waybill <deliveries@example.com>',
  TERMII_API_KEY: 'termii-key',
  TERMII_SENDER_ID: 'Waybill',
};

describe('waybill seed', () => {
  it('refuses APP_ENV=live, saying why, before it starts anything', async () => {
    const run = await runTypeScript(CLI, ['seed'], { env: LIVE });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'waybill: seed: refused with APP_ENV=live: it would credit NGN 100000.00 that no payment backs to the live ledger and add demo couriers that real deliveries would be offered to. Run it against staging only\n',
    );
  }, 30_000);
});

describe('the demo user', () => {
  it('is found again when a seed run at the same time created it first (409)', async () => {
    const made = { id: 'u-1', email: 'demo@waybill.local' };
    const calls: string[] = [];
    let finds = 0;
    const broker = {
      call: async (action: string) => {
        calls.push(action);
        if (action === 'account.findUsers') return finds++ === 0 ? [] : [made];
        throw conflict('A user with this email already exists');
      },
    } as unknown as ServiceBroker;
    expect(await demoUser(broker)).toEqual(made);
    expect(calls).toEqual(['account.findUsers', 'account.createUser', 'account.findUsers']);
  });

  it('fails as it failed when the user cannot be found again', async () => {
    const broker = {
      call: async (action: string) => {
        if (action === 'account.findUsers') return [];
        throw serviceUnavailable('account is away');
      },
    } as unknown as ServiceBroker;
    await expect(demoUser(broker)).rejects.toThrow('account is away');
  });
});

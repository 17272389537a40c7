import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newWebhookSecret, signatureHeader } from '../../../libs/webhook-signature';
import { ROOT, runCommand, runTypeScript } from '../../support/node-run';

/** `waybill webhooks verify` needs no infrastructure: it is run as an integrator would. */
const CLI = join(ROOT, 'bin', 'waybill.ts');
const cli = (args: string[], stdin?: Buffer) => runTypeScript(CLI, args, { stdin });

const SECRET = newWebhookSecret();
const T = 1_760_000_000;
// Bytes a JSON round trip would change: the signature is over these, exactly.
const BODY = Buffer.from('{"id":"evt_1", "data":{"name":"Adé"}}\n');
const HEADER = signatureHeader([SECRET], BODY, T);

let dir: string;
let bodyFile: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-verify-'));
  bodyFile = join(dir, 'body.json');
  writeFileSync(bodyFile, BODY);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const verify = (...extra: string[]) => [
  'webhooks',
  'verify',
  '--secret',
  SECRET,
  '--header',
  HEADER,
  ...extra,
];

describe('waybill webhooks verify', () => {
  it('prints valid for a captured request, read from a file or stdin', async () => {
    expect(await cli(verify('--body-file', bodyFile, '--now', String(T + 10)))).toEqual({
      code: 0,
      stdout: 'valid\n',
      stderr: '',
    });
    const piped = await cli(verify('--body-file', '-', '--now', String(T)), BODY);
    expect(piped).toMatchObject({ code: 0, stdout: 'valid\n' });
  });

  it('takes the secret from WAYBILL_WEBHOOK_SECRET, out of the process list, and asks for one without it', async () => {
    const args = ['webhooks', 'verify', '--header', HEADER, '--body-file', bodyFile];
    args.push('--now', String(T));
    const env = { ...process.env, WAYBILL_WEBHOOK_SECRET: SECRET };
    expect(await runTypeScript(CLI, args, { env })).toMatchObject({ code: 0, stdout: 'valid\n' });
    const without: NodeJS.ProcessEnv = { ...env };
    delete without.WAYBILL_WEBHOOK_SECRET;
    const missing = await runTypeScript(CLI, args, { env: without });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/--secret <secret>.*not specified/);
  });

  it('accepts the header pasted with its name', async () => {
    const args = ['webhooks', 'verify', '--secret', SECRET, '--header'];
    args.push(`Waybill-Signature: ${HEADER}`, '--body-file', bodyFile, '--now', String(T));
    expect(await cli(args)).toMatchObject({ code: 0, stdout: 'valid\n' });
  });

  it('prints why, and exits 1, for a changed body or a stale capture', async () => {
    const changed = await cli(verify('--body-file', '-', '--now', String(T)), Buffer.from('{}'));
    expect(changed.code).toBe(1);
    expect(changed.stdout).toMatch(/^invalid: no v1 signature matches: check the secret/);
    const stale = await cli(verify('--body-file', bodyFile, '--now', String(T + 301)));
    expect(stale).toMatchObject({
      code: 1,
      stdout:
        "invalid: the timestamp is 301 s old, beyond the 300 s tolerance: refuse it as a replay, or check this machine's clock\n",
    });
    const tolerant = ['--now', String(T + 301), '--tolerance', '600'];
    expect(await cli(verify('--body-file', bodyFile, ...tolerant))).toMatchObject({ code: 0 });
  });

  it('says what is missing or unreadable', async () => {
    const missing = await cli(['webhooks', 'verify', '--secret', SECRET, '--body-file', bodyFile]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/required option '--header <value>' not specified/);
    const unreadable = await cli(verify('--body-file', join(dir, 'nowhere.json')));
    expect(unreadable.code).toBe(1);
    expect(unreadable.stderr).toBe(
      `waybill: --body-file: cannot read ${join(dir, 'nowhere.json')} (ENOENT)\n`,
    );
  });

  it('refuses a terminal as the body at once, rather than wait for Ctrl-D', async () => {
    // util-linux `script` (Debian's essential bsdutils) runs the command on a pseudo-terminal.
    const command = [process.execPath, '--import', 'tsx', CLI, ...verify('--body-file', '-')];
    const onTerminal = await runCommand('script', [
      '-qec',
      command.map(quoted).join(' '),
      '/dev/null',
    ]);
    expect(onTerminal.code).toBe(1);
    expect(onTerminal.stdout).toContain(
      'waybill: --body-file -: standard input is a terminal; pipe the raw body in, or name its file',
    );
  });
});

const quoted = (arg: string): string => `'${arg.replaceAll("'", `'\\''`)}'`;

import { eventually } from '../support/eventually';
import { adminHeaders, createUserWithKey, expectErrorEnvelope, request } from '../support/http';
import {
  dropDatabases,
  freePort,
  isolation,
  startNode,
  type NodeProcess,
  type StartOptions,
} from '../support/stack';
import { tcpProxy, type TcpProxy } from '../support/tcp-proxy';

/**
 * A service started while its database cannot be reached waits for it, alive and not ready,
 * instead of exiting (a pod restarted with a growing back-off). The database is the shared
 * one behind a port of the test's own, closed until the test opens it.
 */
describe('a service started while its database cannot be reached', () => {
  const iso = isolation();
  let mongo: TcpProxy;
  let account: NodeProcess;
  let gateway: NodeProcess;
  const others: NodeProcess[] = [];

  /** A process of the account service, its database at `mongoUrl`. */
  const startAccount = (mongoUrl: string, options: Partial<StartOptions> = {}) =>
    startNode({
      services: 'account',
      iso,
      // Each try waits this long for the server: the test does not wait 10 s a try.
      env: { MONGO_URL: mongoUrl, MONGO_TIMEOUT_MS: '1000' },
      waitReady: 'ops-live',
      ...options,
    });

  const exited = (node: NodeProcess) =>
    new Promise<number | string | null>((resolve) => {
      if (node.child.exitCode !== null) resolve(node.child.exitCode);
      else node.child.once('exit', (code, signal) => resolve(code ?? signal));
    });

  beforeAll(async () => {
    mongo = await tcpProxy(process.env.MONGO_URL as string);
    account = await startAccount(`mongodb://127.0.0.1:${mongo.port}`);
    gateway = await startNode({ services: 'gateway', iso });
  });

  afterAll(async () => {
    await Promise.all([account, gateway, ...others].map((node) => node?.stop('SIGKILL')));
    await mongo?.cut();
    await dropDatabases(iso);
  });

  it('stays alive and not ready, saying so, and its actions answer 503', async () => {
    await eventually(
      () => expect(account.output()).toMatch(/MongoDB at 127\.0\.0\.1:\d+ .*cannot be reached/),
      { timeout: 15_000, interval: 100 },
    );
    expect(account.child.exitCode).toBeNull();
    const ready = await request(account.opsUrl, 'GET', '/health/ready');
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({
      ready: false,
      checks: { transporter: true, [`mongo:${iso.dbPrefix}account`]: false },
    });
    const users = await request(gateway.url, 'GET', '/admin/users', { headers: adminHeaders });
    expectErrorEnvelope(users, 503, /temporarily unavailable/);
  });

  it('becomes ready once the database can be reached, its start-up work done', async () => {
    await mongo.open();
    await eventually(
      async () => expect((await request(account.opsUrl, 'GET', '/health/ready')).status).toBe(200),
      { timeout: 20_000, interval: 200 },
    );
    expect(account.child.exitCode).toBeNull();
    // A key is found by its hash through the index and the records the start built.
    const { key, userId } = await eventually(() => createUserWithKey(gateway.url), {
      timeout: 10_000,
      interval: 200,
    });
    const me = await request(gateway.url, 'GET', '/api/me', { headers: { 'api-key': key } });
    expect(me.status).toBe(200);
    expect(me.body.data.user.id).toBe(userId);
  });

  it('stops cleanly while it still waits, its password never written', async () => {
    const closed = await freePort();
    const waiting = await startAccount(`mongodb://waybill:pa55-secret@127.0.0.1:${closed}/`);
    others.push(waiting);
    await eventually(() => expect(waiting.output()).toMatch(/cannot be reached/), {
      timeout: 15_000,
      interval: 100,
    });
    const code = exited(waiting);
    waiting.child.kill('SIGTERM');
    expect(await code).toBe(0);
    expect(waiting.output()).toContain(`MongoDB at 127.0.0.1:${closed}`);
    expect(waiting.output()).not.toContain('pa55-secret');
  });

  it('exits naming MongoDB and its host when the database refuses what it is asked', async () => {
    // An account process has no gateway port to listen on: this settles once it has exited.
    const failed = await startAccount(
      `mongodb://waybill:pa55-secret@127.0.0.1:${mongo.port}/?authMechanism=BOGUS`,
      { waitReady: false },
    ).then(
      (node) => {
        others.push(node);
        return `still running:\n${node.output()}`;
      },
      (err: Error) => err.message,
    );
    expect(failed).toMatch(/exited with 1 before it was ready/);
    expect(failed).toMatch(/failed to start: MongoDB at 127\.0\.0\.1:\d+ \(database \S+account\)/);
    expect(failed).not.toContain('pa55-secret');
  });
});

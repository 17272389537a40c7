import { join } from 'node:path';
import { eventually } from '../support/eventually';
import { NO_SERVERS, ROOT, runTypeScript } from '../support/node-run';
import { dropDatabases, isolation, startNode } from '../support/stack';

/**
 * A fault of ours left uncaught in a running server (bin/server.ts): logged as a JSON line
 * naming it, and the process stops as on SIGTERM, exiting 1 for its orchestrator to start it
 * again, where Node printed a bare stack trace and ended at once.
 */
const iso = isolation();
afterAll(() => dropDatabases(iso));

it.each([
  ['rejection', 'unhandled rejection; stopping', 'a rejection left unhandled, for the test'],
  ['exception', 'uncaught exception; stopping', 'an exception left uncaught, for the test'],
])('an unhandled %s is logged and stops the process, exit 1', async (kind, logged, error) => {
  const node = await startNode({
    services: 'gateway',
    iso,
    nodeArgs: ['--import', join(ROOT, 'test', 'support', 'fault-on-signal.mjs')],
    env: { WAYBILL_TEST_FAULT: kind, NATS_URL: '', LOG_LEVEL: 'info' },
  });
  const exited = new Promise<number | null>((resolve) => node.child.once('exit', resolve));
  node.child.kill('SIGUSR2');
  expect(await exited).toBe(1);
  await eventually(async () => {
    const lines = node
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const said = (text: string) => lines.findIndex((l) => l.msg === text || l.message === text);
    const line = lines[said(logged)];
    expect(line).toBeDefined();
    expect(JSON.stringify(line)).toContain(error);
    // Stopped as on SIGTERM (its services stopped, its peers told), not cut short.
    expect(said('ServiceBroker is stopped. Good bye.')).toBeGreaterThan(said(logged));
  });
});

it.each([
  ['json', (err: string) => JSON.parse(err.trim()) as unknown],
  ['pretty', (err: string) => err],
])(
  'a configuration it cannot start with is said on stderr, exit 1, as LOG_FORMAT=%s writes',
  async (format, read) => {
    const started = await runTypeScript(join(ROOT, 'bin', 'server.ts'), [], {
      env: { ...NO_SERVERS, LOG_FORMAT: format, PORT: 'not-a-port' },
    });
    expect(started.code).toBe(1);
    const said = read(started.stderr);
    const text = 'waybill: invalid configuration: PORT';
    if (format === 'json') expect(JSON.stringify(said)).toContain(text);
    else expect(said).toMatch(new RegExp(`^${text}`));
  },
);

import { eventually } from '../support/eventually';
import { dropDatabases, isolation, startNode, type NodeProcess } from '../support/stack';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const iso = isolation();
let node: NodeProcess;

beforeAll(async () => {
  node = await startNode({ services: 'all', iso, env: { LOG_LEVEL: 'info' } });
});

afterAll(async () => {
  await node?.stop();
  await dropDatabases(iso);
});

const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${node.url}${path}`, { headers });

/** The gateway's `http` log lines, parsed. */
const accessLines = () =>
  node
    .output()
    .split('\n')
    .filter((line) => line.includes('"msg":"http"'))
    .map((line) => JSON.parse(line) as { path: string; status: number; requestId?: string });

describe('X-Request-ID', () => {
  it('names every answer, errors included, and its access log line', async () => {
    const reply = await get('/api/countries');
    expect(reply.status).toBe(401);
    const id = reply.headers.get('x-request-id') ?? '';
    expect(id).toMatch(UUID);
    await eventually(
      () =>
        expect(accessLines()).toContainEqual(
          expect.objectContaining({ path: '/api/countries', status: 401, requestId: id }),
        ),
      { timeout: 2_000, interval: 50 },
    );
  });

  it("keeps the client's own id when it is sane, and replaces one that is not", async () => {
    const own = await get('/health/live', { 'x-request-id': 'order-42/try-1' });
    expect(own.headers.get('x-request-id')).toBe('order-42/try-1');
    const long = await get('/health/live', { 'x-request-id': 'x'.repeat(500) });
    expect(long.headers.get('x-request-id')).toMatch(UUID);
    const spaced = await get('/health/live', { 'x-correlation-id': 'two words' });
    expect(spaced.headers.get('x-request-id')).toMatch(UUID);
  });
});

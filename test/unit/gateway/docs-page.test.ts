import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { docsAssetRoute } from '../../../services/gateway/docs-page';
import type { GatewayRequest } from '../../../services/gateway/http';
import { writeError } from '../../../services/gateway/web-overrides';

/** The docs asset route on a real HTTP server, errors through the gateway's envelope writer. */
describe('docsAssetRoute', () => {
  const dir = mkdtempSync(join(tmpdir(), 'docs-assets-'));
  const logged: unknown[][] = [];
  const route = docsAssetRoute(dir);
  let server: Server;
  let base: string;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const gatewayReq = Object.assign(req as GatewayRequest, {
        $params: { file: req.url?.split('/').pop() },
      });
      route(gatewayReq, res, (err) =>
        writeError(
          {
            environment: 'staging',
            logger: () => ({ error: (...a: unknown[]) => logged.push(a) }),
          },
          gatewayReq,
          res,
          err,
        ),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    logged.length = 0;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
  });

  it('streams a whitelisted file with its type', async () => {
    writeFileSync(join(dir, 'swagger-ui.css'), 'body { color: teal }');
    const res = await fetch(`${base}/docs/assets/swagger-ui.css`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect(await res.text()).toBe('body { color: teal }');
  });

  it('streams a large file whole, and a client leaving midway disturbs nothing', async () => {
    const big = randomBytes(3 * 1024 * 1024 + 17);
    writeFileSync(join(dir, 'swagger-ui-bundle.js'), big);
    const res = await fetch(`${base}/docs/assets/swagger-ui-bundle.js`);
    expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);

    const leaving = new AbortController();
    const partial = await fetch(`${base}/docs/assets/swagger-ui-bundle.js`, {
      signal: leaving.signal,
    });
    await partial.body?.getReader().read();
    leaving.abort();
    const again = await fetch(`${base}/docs/assets/swagger-ui-bundle.js`);
    expect(Buffer.from(await again.arrayBuffer()).length).toBe(big.length);
    expect(logged).toEqual([]);
  });

  it.each(['secret.txt', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])(
    'answers 404 in the envelope for a name that is not whitelisted: %s',
    async (name) => {
      writeFileSync(join(dir, 'secret.txt'), 'no');
      const res = await fetch(`${base}/docs/assets/${name}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ statusCode: 404, message: 'No such docs asset' });
      expect(logged).toEqual([]);
    },
  );

  it.each([
    ['missing', () => undefined],
    ['unreadable (a directory)', () => mkdirSync(join(dir, 'swagger-ui.css'))],
  ])('answers a clean 500 in the envelope, logged, when the file is %s', async (_name, setUp) => {
    setUp();
    const res = await fetch(`${base}/docs/assets/swagger-ui.css`);
    expect(res.status).toBe(500);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toMatchObject({
      statusCode: 500,
      path: '/docs/assets/swagger-ui.css',
      message: 'Internal server error; the failure was logged, retry later',
    });
    expect(logged).toHaveLength(1);
    // The server is still there for the next request.
    writeFileSync(join(dir, 'favicon-32x32.png'), 'png');
    expect((await fetch(`${base}/docs/assets/favicon-32x32.png`)).status).toBe(200);
  });
});

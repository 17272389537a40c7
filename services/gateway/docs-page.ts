import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { notFound } from '../../libs/errors';
import { SECURE_PAGE_HEADERS, scriptHash } from '../../libs/html';
import type { Next } from './edge';
import type { GatewayRequest } from './http';

/** Swagger UI, served from the installed package so the docs work offline. */
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const DOCS_SCRIPT = `
    window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true });
  `;

export const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Waybill API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>${DOCS_SCRIPT}</script>
</body>
</html>
`;

/**
 * The pages' security headers (libs/html.ts; the API's documentation may be indexed), with
 * what Swagger UI needs: its own script and the inline one by hash, its stylesheet and the
 * inline styles it sets, its data: images, and calls to this origin ("Try it out"). Not
 * framed: API keys are typed into it.
 */
export const DOCS_HEADERS: Readonly<Record<string, string>> = {
  ...SECURE_PAGE_HEADERS,
  'Content-Security-Policy': [
    "default-src 'none'",
    `script-src 'self' ${scriptHash(DOCS_SCRIPT)}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'Cache-Control': 'no-cache',
};

/**
 * Streams one whitelisted file of `dir`; false when the name is not one of them. A file that
 * cannot be read rejects before anything is sent, so it can still be answered in the envelope;
 * a failure once bytes went out can only cut the connection, which `pipeline` does, closing
 * the file too (also when the client leaves early).
 */
export async function sendDocsAsset(
  name: string,
  res: ServerResponse,
  dir = SWAGGER_UI_DIR,
): Promise<boolean> {
  // Own names only: `constructor` or `__proto__` are not assets.
  if (!Object.hasOwn(ASSETS, name)) return false;
  const type = ASSETS[name];
  const file = createReadStream(join(dir, name));
  try {
    // The first chunk (or the end) is read before the status is set: opening and the first
    // read are where a missing or unreadable file fails.
    await once(file, 'readable');
  } catch (err) {
    file.destroy();
    throw err;
  }
  res.statusCode = 200;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'public, max-age=86400');
  pipeline(file, res, () => {
    // Nothing left to answer: the headers are out, and pipeline has closed both ends.
  });
  return true;
}

/** `GET /docs/assets/:file`: the files of `dir` (Swagger UI's by default). */
export function docsAssetRoute(dir = SWAGGER_UI_DIR) {
  return (
    req: GatewayRequest & { $params?: { file?: string } },
    res: ServerResponse,
    next: Next,
  ): void => {
    sendDocsAsset(String(req.$params?.file ?? ''), res, dir).then(
      (sent) => sent || next(notFound('No such docs asset')),
      (err: unknown) => next(err),
    );
  };
}

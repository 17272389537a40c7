import { createReadStream } from 'node:fs';
import { dirname, join } from 'node:path';
import type { ServerResponse } from 'node:http';

/** Swagger UI, served from the installed package so the docs work offline. */
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

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
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true });
  </script>
</body>
</html>
`;

/** Streams one whitelisted Swagger UI file; false when the name is not one of them. */
export function sendDocsAsset(name: string, res: ServerResponse): boolean {
  const type = ASSETS[name];
  if (!type) return false;
  res.statusCode = 200;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'public, max-age=86400');
  createReadStream(join(SWAGGER_UI_DIR, name)).pipe(res);
  return true;
}

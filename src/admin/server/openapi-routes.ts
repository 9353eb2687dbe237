/**
 * The API reference on the admin listener: the OpenAPI documents (/openapi/delivery.json,
 * /openapi/admin.json) and a page rendering them with swagger-ui-dist, served from this package,
 * never from a CDN (/openapi/).
 *
 * Served without the admin token, decided: the documents describe the API, they hold no data, and a
 * browser opening the page cannot send a bearer token; the listener is on loopback or a private
 * network anyway (docs/admin.md). The page's "Try it out" asks for the token like any client.
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ERROR_STATUS, errorResponse } from '../../runtime/errors.js';

export const OPENAPI_PREFIX = '/openapi';

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/** The swagger-ui-dist files the page loads (nothing else of the package is served). */
const UI_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'text/javascript; charset=utf-8',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rcd API reference</title>
<link rel="stylesheet" href="/openapi/ui/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/openapi/ui/swagger-ui-bundle.js"></script>
<script src="/openapi/ui/swagger-ui-standalone-preset.js"></script>
<script src="/openapi/ui/init.js"></script></body></html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  urls: [{ url: '/openapi/delivery.json', name: 'delivery API' }, { url: '/openapi/admin.json', name: 'admin API' }],
  dom_id: '#ui',
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: 'StandaloneLayout',
  validatorUrl: null,
});
`;

let assets: Map<string, Asset> | null = null;

/**
 * Built on the first request for the reference: most servers never serve it, so the documents'
 * modules (every schema of the API) load only then.
 */
async function loadAssets(): Promise<Map<string, Asset>> {
  if (assets !== null) return assets;
  const { openApiDocuments } = await import('../../openapi/documents.js');
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const docs = openApiDocuments();
  const map = new Map<string, Asset>();
  map.set('/openapi/delivery.json', { type: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify(docs.delivery)) });
  map.set('/openapi/admin.json', { type: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify(docs.admin)) });
  map.set('/openapi/', { type: 'text/html; charset=utf-8', body: Buffer.from(PAGE) });
  map.set('/openapi/ui/init.js', { type: 'text/javascript; charset=utf-8', body: Buffer.from(INIT) });
  for (const [file, type] of Object.entries(UI_FILES)) map.set(`/openapi/ui/${file}`, { type, body: readFileSync(join(dist, file)) });
  assets = map;
  return map;
}

// The page runs only its own scripts; swagger-ui sets inline styles and shows data: images.
const CSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'";

/** Whether the path is the reference's; such requests are answered here, before authentication. */
export function isOpenApiPath(url: string | undefined): boolean {
  return url !== undefined && (url === OPENAPI_PREFIX || url.startsWith(OPENAPI_PREFIX + '/') || url.startsWith(OPENAPI_PREFIX + '?'));
}

export async function serveOpenApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://admin.invalid').pathname;
  const asset = (await loadAssets()).get(path === OPENAPI_PREFIX ? '/openapi/' : path);
  if (asset === undefined) {
    sendError(res, 'not_found', 'no such file under /openapi/');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendError(res, 'method_not_allowed', 'the API reference is read with GET', { allow: 'GET, HEAD' });
    return;
  }
  res.writeHead(200, {
    'content-type': asset.type,
    'content-length': asset.body.length,
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
    'content-security-policy': CSP,
  });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}

function sendError(res: ServerResponse, code: 'not_found' | 'method_not_allowed', message: string, extra: Record<string, string> = {}): void {
  const e = errorResponse(code, message);
  res.writeHead(ERROR_STATUS[code], { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...extra });
  res.end(e.body);
}

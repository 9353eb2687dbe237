/**
 * The web console's files on the admin listener, under /console/. They are built by `npm run build`
 * (scripts/build-console.mjs) into dist/console/ with content-hashed names and a .gz and .br beside
 * each, read into memory once on the first console request (a few hundred KiB), and served as is:
 * no compression, templating or file system access per request.
 *
 * The files are public (they hold no data; every call the console makes needs the admin token), so
 * they are served before authentication. What a browser may do with them is pinned by a strict
 * Content-Security-Policy: scripts and styles from this origin only, calls to this origin only, no
 * framing, no inline script or style attribute text.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const CONSOLE_PREFIX = '/console/';

/** Served with every console file (docs/console.md, "Security"). */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** Hashed names never change content: a year, immutable. index.html names them and is revalidated. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

interface Asset {
  readonly type: string;
  readonly cache: string;
  readonly identity: Buffer;
  readonly gzip: Buffer | null;
  readonly brotli: Buffer | null;
}

let assets: Map<string, Asset> | null = null;

/** dist/console/, whether this module runs compiled (dist/src/admin/console/) or from the sources. */
function consoleDir(): string {
  const up = fileURLToPath(new URL('../../../', import.meta.url));
  return basename(up) === 'dist' ? join(up, 'console') : join(up, 'dist', 'console');
}

function loadAssets(dir: string): Map<string, Asset> {
  const found = new Map<string, Asset>();
  if (!existsSync(dir)) return found;
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const file = join(folder, entry.name);
      if (entry.isDirectory()) {
        walk(file);
        continue;
      }
      const ext = extname(entry.name);
      const type = TYPES[ext];
      if (type === undefined) continue; // .gz and .br are read with their file
      const path = relative(dir, file).split(sep).join('/');
      const optional = (name: string): Buffer | null => (existsSync(name) ? readFileSync(name) : null);
      found.set(path, {
        type,
        cache: path === 'index.html' ? REVALIDATE : IMMUTABLE,
        identity: readFileSync(file),
        gzip: optional(file + '.gz'),
        brotli: optional(file + '.br'),
      });
    }
  };
  walk(dir);
  return found;
}

/** Which stored encoding to send: brotli, then gzip, then none; `q=0` refuses one. */
function pickEncoding(header: string | undefined, asset: Asset): 'br' | 'gzip' | null {
  if (header === undefined) return null;
  const accepted = new Set<string>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const refused = params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
    if (name !== undefined && !refused) accepted.add(name.trim());
  }
  if (asset.brotli !== null && accepted.has('br')) return 'br';
  if (asset.gzip !== null && (accepted.has('gzip') || accepted.has('x-gzip'))) return 'gzip';
  return null;
}

function sendPlain(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...extra });
  res.end(text);
}

/**
 * Answers a request for the console and returns true, or returns false when the path is not the
 * console's (the admin API handles it).
 */
export function serveConsole(req: IncomingMessage, res: ServerResponse, log: (line: string) => void): boolean {
  const url = req.url ?? '/';
  const pathname = url.split('?', 1)[0] as string;
  if (pathname === '/console') {
    res.writeHead(308, { location: CONSOLE_PREFIX, 'content-length': 0 });
    res.end();
    return true;
  }
  if (!pathname.startsWith(CONSOLE_PREFIX)) return false;
  // The body of a console request is never read: drain it so keep-alive stays usable.
  req.resume();
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    sendPlain(res, 405, 'method not allowed', { allow: 'GET, HEAD' });
    return true;
  }
  if (assets === null) {
    assets = loadAssets(consoleDir());
    if (assets.size === 0) log(`admin: the console is not built (no files in ${consoleDir()}); run npm run build`);
  }
  const rest = pathname.slice(CONSOLE_PREFIX.length);
  const asset = assets.get(rest === '' ? 'index.html' : rest);
  if (asset === undefined) {
    sendPlain(res, 404, assets.size === 0 ? 'the console is not built: run npm run build' : 'not found');
    return true;
  }
  const encoding = pickEncoding(req.headers['accept-encoding'], asset);
  const body = encoding === 'br' ? asset.brotli! : encoding === 'gzip' ? asset.gzip! : asset.identity;
  const headers: Record<string, string | number> = {
    'content-type': asset.type,
    'cache-control': asset.cache,
    'content-length': body.length,
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    vary: 'Accept-Encoding',
  };
  if (encoding !== null) headers['content-encoding'] = encoding;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
  return true;
}

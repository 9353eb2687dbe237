// Bundles the admin console (src/console/) into dist/console/: content-hashed scripts and styles
// under assets/ (served with a one-year immutable cache), index.html naming them (served no-cache),
// and a .gz and a .br beside every file so the admin listener never compresses per request.
// Run by `npm run build` after tsc has type-checked the console (src/console/tsconfig.json).
import { createHash } from 'node:crypto';
import { build } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'console');
const assets = join(out, 'assets');

// src/store/jsonc.ts (the server's JSONC rules, bundled so the editor refuses exactly what the
// server refuses) imports the content hash, which needs a native addon. The console never hashes:
// it gets a module whose hash function says so if it is ever called.
const browserIdentity = {
  name: 'browser-identity',
  setup(b) {
    b.onResolve({ filter: /shared\/identity\.js$/ }, () => ({ path: 'identity', namespace: 'browser-identity' }));
    b.onLoad({ filter: /.*/, namespace: 'browser-identity' }, () => ({
      contents: 'export function contentHash() { throw new Error("the content hash is computed by the server"); }',
      loader: 'js',
    }));
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(assets, { recursive: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: { console: 'src/console/main.tsx', style: 'src/console/style.css' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox115', 'safari16.4'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  outdir: assets,
  entryNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'linked',
  logLevel: 'warning',
  plugins: [browserIdentity],
});

// The licenses of the bundled packages (MIT; diff is BSD-3-Clause): minified bundles drop their headers, so their
// notices ship beside the bundle, named by content like the other assets.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m !== null) packages.set(m[1], true);
}
let notices = 'Third-party software bundled into the rcd console\n';
for (const dir of [...packages.keys()].sort()) {
  const abs = join(root, dir);
  const pkg = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8'));
  const file = readdirSync(abs).find((f) => /^licen[sc]e/i.test(f));
  notices += `\n==== ${pkg.name} ${pkg.version} (${pkg.license ?? 'see below'})\n\n`;
  notices += file !== undefined && existsSync(join(abs, file)) ? readFileSync(join(abs, file), 'utf8') : `${pkg.license}\n`;
}
const noticesName = `licenses-${createHash('sha256').update(notices).digest('hex').slice(0, 8).toUpperCase()}.txt`;
writeFileSync(join(assets, noticesName), notices);

const names = Object.keys(result.metafile.outputs).map((p) => basename(p));
const script = names.find((n) => n.startsWith('console-') && n.endsWith('.js'));
const style = names.find((n) => n.startsWith('style-') && n.endsWith('.css'));
if (script === undefined || style === undefined) throw new Error(`console build: missing outputs in ${names.join(', ')}`);
const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rcd console</title>
<link rel="stylesheet" href="assets/${style}">
<script type="module" src="assets/${script}"></script>
</head>
<body>
<div id="app"></div>
<noscript>The rcd console needs JavaScript.</noscript>
<!-- Third-party notices: assets/${noticesName} -->
</body>
</html>
`;
writeFileSync(join(out, 'index.html'), html);

function compress(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) {
      compress(file);
      continue;
    }
    const body = readFileSync(file);
    writeFileSync(file + '.gz', gzipSync(body, { level: 9 }));
    writeFileSync(file + '.br', brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } }));
  }
}
compress(out);

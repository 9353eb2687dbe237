/* global URL, process */
// Bundles the client SDK's browser build (dist/client/rcd-client.js: ESM, minified) with esbuild and
// records its size, minified and gzipped, in dist/client/size.json (docs/client.md quotes it).
// platform 'browser' makes any node: import in the core a build error.
import { build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = fileURLToPath(new URL('..', import.meta.url));
const outfile = `${root}dist/client/rcd-client.js`;
await build({
  entryPoints: [`${root}src/client/index.ts`],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2020'],
  minify: true,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const bytes = readFileSync(outfile);
const size = { minifiedBytes: bytes.length, gzippedBytes: gzipSync(bytes, { level: 9 }).length };
writeFileSync(`${root}dist/client/size.json`, JSON.stringify(size) + '\n');
if (process.env.RCD_QUIET_BUILD !== '1') process.stdout.write(`client bundle: ${size.minifiedBytes} bytes minified, ${size.gzippedBytes} gzipped\n`);

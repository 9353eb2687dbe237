#!/usr/bin/env -S node --single-threaded-gc
// node --single-threaded-gc: each thread collects its own heap (src/runtime/heap.ts, gcThreadsDescription).
// Thin launcher so `rcd` works from a checkout, through `npx rcd`, and as a global command
// (`npm install -g .` or `npm link`: npm symlinks bin/rcd.js, and Node resolves the symlink, so the
// path below is the package's own). The CLI itself is compiled TypeScript in dist/, which a checkout
// has only after `npm run build`: without it, say so instead of Node's ERR_MODULE_NOT_FOUND trace.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { fileURLToPath, URL } from 'node:url';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  process.stderr.write(`rcd: error: ${fileURLToPath(cli)} is missing: rcd is not built. Run "npm run build" in ${root} first.\n`);
  process.exit(1);
}
await import(cli.href);

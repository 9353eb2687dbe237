/* global URL, process */
// Bundles the entry module of each thread rcd starts, in place over tsc's output in dist/src: the
// program (cli.js) and every worker thread's entry. Node 20's ESM loader pays for each module it
// resolves, reads, links and evaluates, and a thread of rcd loads about a hundred; bundled, a thread
// loads its entry and a few chunks, so `rcd serve` and every CLI command start on less CPU
// (bench/startup measures it). Packages stay imports (node_modules is not bundled). The other files
// of dist/src stay as tsc wrote them, for what imports them directly (the benchmarks, the tests'
// helpers).
//
// Rollup, because it keeps each module-level `const` a `const`: TurboFan treats such a binding as a
// constant (a call through it is a known call), which the request path relies on (the modules bind
// what they call as constants). esbuild turns every top-level declaration of a bundle into a `var`,
// and the request path then costs more instructions (bench:cost's callgrind count, HISTORY.md).
//
// What a module loads with import() (the server's modules from cli.js, the delivery modules from
// the server) goes into chunks of its own, `<entry>.chunk-<hash>.js` beside the entry, loaded when
// first needed, as before.
//
// A module that finds a file next to it with `new URL('./x.js', import.meta.url)` (a thread's entry,
// package.json, the console's assets) finds it relative to its bundle once bundled, so each such
// literal is rewritten to the same file relative to the entry's folder, where the entry and its
// chunks all are. A `new URL` on import.meta.url that is not a literal path stops the build: it
// could not be found after bundling.
//
// Each bundle links a source map chained to tsc's, so `node --enable-source-maps` reports TypeScript
// lines (docs/operations.md).
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rollup } from 'rollup';

/** The threads' entries, relative to dist/src: every `new Worker`/Piscina filename names one. */
const THREAD_ENTRIES = [
  'cli.js',
  'control/thread.js',
  'control/import-worker.js',
  'worker/entry.js',
  'delivery/loop-thread.js',
  'metrics/thread.js',
  'exposures/writer-thread.js',
];

const root = fileURLToPath(new URL('..', import.meta.url));
const distSrc = resolve(root, 'dist/src');
const NEW_URL = /new URL\(\s*(['"])([^'"]*)\1\s*,\s*import\.meta\.url\s*\)/g;
const LITERAL_NEW_URL = new RegExp(NEW_URL.source);
const ANY_NEW_URL = /new URL\([^)]*import\.meta\.url\s*\)/g;
const SOURCE_MAP_COMMENT = /\n\/\/# sourceMappingURL=\S+\s*$/;

/** A path relative to `fromDir` as a URL reference: forward slashes, './' in front of a sibling, a folder's trailing '/' kept. */
function urlReference(fromDir, target, folder) {
  let rel = relative(fromDir, target).split(sep).join('/');
  if (rel === '') rel = '.';
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return folder && !rel.endsWith('/') ? `${rel}/` : rel;
}

/**
 * Loads each compiled module of dist/src with tsc's source map, its file-relative URLs rewritten so
 * that they hold from a bundle in `outDir`.
 */
function compiledModules(outDir) {
  return {
    name: 'compiled-modules',
    async load(id) {
      if (!id.startsWith(distSrc + sep)) return null;
      const source = await readFile(id, 'utf8');
      const here = dirname(id);
      const code = source.replace(SOURCE_MAP_COMMENT, '\n').replace(NEW_URL, (_, quote, ref) => {
        const target = resolve(here, ref);
        return `new URL(${quote}${urlReference(outDir, target, ref.endsWith('/'))}${quote}, import.meta.url)`;
      });
      const unknown = [...code.matchAll(ANY_NEW_URL)].filter((m) => !LITERAL_NEW_URL.test(m[0]));
      if (unknown.length > 0) this.error(`${relative(root, id)}: ${unknown[0][0]} is not a literal path; it cannot be rewritten for the bundle`);
      const mapFile = `${id}.map`;
      return { code, map: existsSync(mapFile) ? await readFile(mapFile, 'utf8') : null };
    },
  };
}

/** Packages and node's modules stay imports; only dist's own files (relative or absolute paths) are bundled. */
function external(id) {
  return !id.startsWith('.') && !id.startsWith('/');
}

for (const entry of THREAD_ENTRIES) {
  const file = resolve(distSrc, entry);
  const outDir = dirname(file);
  const base = basename(file, '.js');
  const bundle = await rollup({
    input: file,
    external,
    plugins: [compiledModules(outDir)],
    // What the entry exports stays exported (tests and benchmarks import some entries' exports).
    preserveEntrySignatures: 'strict',
    onwarn(warning) {
      throw new Error(`bundling ${entry}: ${warning.message}`);
    },
  });
  for (const old of readdirSync(outDir)) if (old.startsWith(`${base}.chunk-`)) rmSync(join(outDir, old));
  await bundle.write({
    dir: outDir,
    format: 'es',
    entryFileNames: '[name].js',
    chunkFileNames: `${base}.chunk-[hash].js`,
    sourcemap: true,
    sourcemapExcludeSources: true,
  });
  await bundle.close();
}
if (process.env.RCD_QUIET_BUILD !== '1') process.stdout.write(`thread bundles: ${THREAD_ENTRIES.length} entries of dist/src\n`);

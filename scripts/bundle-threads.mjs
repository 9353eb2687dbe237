/* global URL, process */
// Bundles the entry module of each thread rcd starts, in place over tsc's output in dist/src: the
// program (cli.js) and every worker thread's entry. Node 20's ESM loader pays for each module it
// resolves, reads, links and evaluates, and a thread of rcd loads about a hundred; bundled, a thread
// loads one file, so `rcd serve` and every CLI command start on less CPU (bench/startup measures it).
// Packages stay imports (node_modules is not bundled). The other files of dist/src stay as tsc wrote
// them, for what imports them directly (the benchmarks, the tests' helpers).
//
// A module that finds a file next to it with `new URL('./x.js', import.meta.url)` (a thread's entry,
// package.json, the console's assets) finds it relative to the bundle once bundled, so each such
// literal is rewritten to the same file relative to the bundle's folder. A `new URL` on
// import.meta.url that is not a literal path stops the build: it could not be found after bundling.
//
// Each bundle links a source map chained to tsc's, so `node --enable-source-maps` reports TypeScript
// lines (docs/operations.md).
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';
import { dirname, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The threads' entries, relative to dist/src: every `new Worker`/Piscina filename names one. */
export const THREAD_ENTRIES = [
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
const ANY_NEW_URL = /new URL\([^)]*import\.meta\.url\s*\)/g;

/** A path relative to `fromDir` as a URL reference: forward slashes, './' in front of a sibling, a folder's trailing '/' kept. */
function urlReference(fromDir, target, folder) {
  let rel = relative(fromDir, target).split(sep).join('/');
  if (rel === '') rel = '.';
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return folder && !rel.endsWith('/') ? `${rel}/` : rel;
}

/** Rewrites each module's file-relative URLs so that they hold from the bundle at `outDir`. */
function relativeUrls(outDir) {
  return {
    name: 'relative-urls',
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, async (args) => {
        if (!args.path.startsWith(distSrc + sep)) return undefined;
        const source = await readFile(args.path, 'utf8');
        const here = dirname(args.path);
        const contents = source.replace(NEW_URL, (_, quote, ref) => {
          const target = resolve(here, ref);
          return `new URL(${quote}${urlReference(outDir, target, ref.endsWith('/'))}${quote}, import.meta.url)`;
        });
        const unknown = [...contents.matchAll(ANY_NEW_URL)].filter((m) => !new RegExp(NEW_URL.source).test(m[0]));
        if (unknown.length > 0) {
          return { errors: unknown.map((m) => ({ text: `${relative(root, args.path)}: ${m[0]} is not a literal path; it cannot be rewritten for the bundle` })) };
        }
        return { contents, loader: 'js', resolveDir: here };
      });
    },
  };
}

for (const entry of THREAD_ENTRIES) {
  const file = resolve(distSrc, entry);
  await build({
    entryPoints: [file],
    outfile: file,
    allowOverwrite: true,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
    plugins: [relativeUrls(dirname(file))],
  });
}
if (process.env.RCD_QUIET_BUILD !== '1') process.stdout.write(`thread bundles: ${THREAD_ENTRIES.length} entries of dist/src\n`);

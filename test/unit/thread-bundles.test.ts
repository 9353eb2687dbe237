/**
 * The build bundles the entry of every thread rcd starts (scripts/bundle-threads.mjs): each thread
 * then loads its entry and a few chunks beside it. This reads the sources for the threads there are
 * (every `new Worker` and Piscina `filename` on a `new URL(..., import.meta.url)`, and the program's
 * cli.js) and the built dist/src for what the build made of them: a thread whose entry is not in the
 * script's list would load its modules one by one, and a file reference the bundling rewrote wrongly
 * would be found only by the server that needs it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const DIST_SRC = join(ROOT, 'dist', 'src');

/** Every thread entry the sources start, relative to src/ as .js: cli.js and each Worker or Piscina file. */
function threadEntries(): string[] {
  const entries = new Set(['cli.js']);
  const started = /(?:new Worker\(|filename:\s*)new URL\('([^']+)', import\.meta\.url\)/g;
  const sources = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts')).map((name) => join(SRC, name));
  for (const file of sources) {
    for (const m of readFileSync(file, 'utf8').matchAll(started)) entries.add(relative(SRC, resolve(dirname(file), m[1]!)).split('\\').join('/'));
  }
  return [...entries].sort();
}

/** A built entry and the chunks beside it that hold what it loads with import(). */
function bundleFiles(entry: string): string[] {
  const file = join(DIST_SRC, entry);
  const chunk = `${basename(entry, '.js')}.chunk-`;
  return [file, ...readdirSync(dirname(file)).filter((f) => f.startsWith(chunk) && f.endsWith('.js')).map((f) => join(dirname(file), f))];
}

describe('thread bundles', () => {
  const entries = threadEntries();

  it('the sources start the seven threads the build bundles', () => {
    const script = readFileSync(join(ROOT, 'scripts', 'bundle-threads.mjs'), 'utf8');
    const listed = [...script.slice(script.indexOf('THREAD_ENTRIES = ['), script.indexOf('];')).matchAll(/'([^']+\.js)'/g)].map((m) => m[1]!).sort();
    expect(entries).toEqual(listed);
    expect(entries).toHaveLength(7);
  });

  it('each built entry is bundled: it and its chunks import no module of dist but those chunks', () => {
    for (const entry of entries) {
      const chunk = `./${basename(entry, '.js')}.chunk-`;
      for (const file of bundleFiles(entry)) {
        const relative = [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']*)["']/g)].map((m) => m[1]!);
        expect(relative.filter((path) => !path.startsWith(chunk)), file).toEqual([]);
      }
    }
  });

  it('every file a bundle finds beside it (`new URL(path, import.meta.url)`) is there', () => {
    let found = 0;
    for (const entry of entries) {
      for (const file of bundleFiles(entry)) {
        for (const m of readFileSync(file, 'utf8').matchAll(/new URL\(["']([^"']+)["'], import\.meta\.url\)/g)) {
          expect(existsSync(fileURLToPath(new URL(m[1]!, `file://${file}`))), `${file}: ${m[1]}`).toBe(true);
          found++;
        }
      }
    }
    // cli.js finds package.json and five thread entries; the control thread, its import thread and the console's files.
    expect(found).toBeGreaterThanOrEqual(8);
  });
});

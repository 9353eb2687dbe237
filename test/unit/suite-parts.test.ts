/**
 * The suite's two parts together run every test file exactly once: the files vitest itself selects
 * for `npm test` (`vitest run`) and for `npm run test:slow` (`vitest run --mode slow`), read through
 * its Node API from vitest.config.ts without running them, are disjoint and together are every
 * *.test.ts under test/; and SLOW_FILES names only files that exist, each once.
 */
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import { SLOW_FILES } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The test files vitest runs in `mode`, relative to the checkout, sorted. */
async function selected(mode: 'test' | 'slow'): Promise<string[]> {
  const vitest = await createVitest('test', { watch: false, mode, root: ROOT, config: join(ROOT, 'vitest.config.ts') });
  try {
    return (await vitest.globTestSpecifications()).map((spec) => relative(ROOT, spec.moduleId)).sort();
  } finally {
    await vitest.close();
  }
}

/** Every *.test.ts under test/, relative to the checkout, sorted. */
function onDisk(): string[] {
  return readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.test.ts'))
    .map((name) => `test/${name}`)
    .sort();
}

describe('npm test and npm run test:slow', () => {
  it('SLOW_FILES names existing test files, each once', () => {
    const all = new Set(onDisk());
    expect(SLOW_FILES.filter((f) => !all.has(f))).toEqual([]);
    expect(new Set(SLOW_FILES).size).toBe(SLOW_FILES.length);
  });

  it('run every test file under test/, each in exactly one of the two', async () => {
    const fast = await selected('test');
    const slow = await selected('slow');
    expect(slow).toEqual([...SLOW_FILES].sort());
    expect(fast.filter((f) => slow.includes(f))).toEqual([]);
    expect([...fast, ...slow].sort()).toEqual(onDisk());
  }, 30_000);
});

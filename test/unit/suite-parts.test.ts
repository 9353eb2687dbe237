/**
 * The suite's parts together run every test file exactly once: the files vitest itself selects for
 * `npm test` (`vitest run`, its paired and alone groups) and for `npm run test:slow` (`vitest run
 * --mode slow`), read through its Node API from vitest.config.ts without running them, are disjoint
 * and together are every *.test.ts under test/; SLOW_FILES and ALONE_FILES name only files that exist,
 * each once and in one list; no file of the paired group measures elapsed time, so that a file
 * bound to a deadline never shares the machine with a second file; and, since a test process runs
 * file after file (vitest.config.ts, `isolate: false`), no test file or in-process helper changes
 * that process for the files after it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import { ALONE_FILES, SLOW_FILES } from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * Source that measures elapsed time: a call of `performance.now` (read for a difference), `Date.now`
 * minus a start, or a duration in ms (`firstByteMs`, `closeMs`, `.ms`) held under a bound. A time
 * of day held under the clock's reading (`firstSeenMs` under `Date.now()`) is a timestamp, not a duration.
 */
const MEASURES_ELAPSED = /performance\.now\(\)|Date\.now\(\)\s*-\s*[\w(]|[mM]s\)\.toBeLessThan\w*\((?!Date\.now\(\))/;

/**
 * Source that changes the test process for the files after it: the environment, the working
 * directory, vitest's fake timers, stubs and module mocks. A process listener is allowed when the
 * same source removes it (PROCESS_LISTENER_REMOVED).
 */
const CHANGES_PROCESS =
  /process\.env(?:\.\w+|\[[^\]]+\])\s*=(?!=)|delete\s+process\.env|Object\.assign\(\s*process\.env|process\.chdir\(|vi\.(?:useFakeTimers|stubEnv|stubGlobal|mock|doMock)\(/;
const PROCESS_LISTENER = /process\.(?:on|once|addListener)\(/;
const PROCESS_LISTENER_REMOVED = /process\.(?:off|removeListener|removeAllListeners)\(/;

function changesProcess(source: string): boolean {
  return CHANGES_PROCESS.test(source) || (PROCESS_LISTENER.test(source) && !PROCESS_LISTENER_REMOVED.test(source));
}

/** Files the check skips: helpers that run as processes of their own, and this file (its examples). */
const UNCHECKED = new Set(['test/helpers/global-setup.ts', 'test/helpers/postgres-process.ts', 'test/unit/suite-parts.test.ts']);

/** The test files vitest runs in `mode`, relative to the checkout, sorted, each with its group's name. */
async function selected(mode: 'test' | 'slow'): Promise<{ file: string; group: string }[]> {
  const vitest = await createVitest('test', { watch: false, mode, root: ROOT, config: join(ROOT, 'vitest.config.ts') });
  try {
    return (await vitest.globTestSpecifications())
      .map((spec) => ({ file: relative(ROOT, spec.moduleId), group: spec.project.name }))
      .sort((a, b) => a.file.localeCompare(b.file));
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
  it('SLOW_FILES and ALONE_FILES name existing test files, each once and in one list', () => {
    const all = new Set(onDisk());
    const listed = [...SLOW_FILES, ...ALONE_FILES];
    expect(listed.filter((f) => !all.has(f))).toEqual([]);
    expect(new Set(listed).size).toBe(listed.length);
  });

  it('run every test file under test/, each in exactly one of the two; npm test runs ALONE_FILES alone and the rest in pairs', async () => {
    const fast = await selected('test');
    const slow = (await selected('slow')).map((s) => s.file);
    expect(slow).toEqual([...SLOW_FILES].sort());
    expect(fast.filter((s) => s.group === 'alone').map((s) => s.file)).toEqual([...ALONE_FILES].sort());
    expect(fast.filter((s) => s.group !== 'alone').every((s) => s.group === 'paired')).toBe(true);
    expect(fast.filter((s) => slow.includes(s.file))).toEqual([]);
    expect([...fast.map((s) => s.file), ...slow].sort()).toEqual(onDisk());
  }, 30_000);

  it('no file of the paired group measures elapsed time (such a file goes into ALONE_FILES or SLOW_FILES)', () => {
    const listed = new Set([...SLOW_FILES, ...ALONE_FILES]);
    const measuring = onDisk().filter((f) => !listed.has(f) && MEASURES_ELAPSED.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(measuring).toEqual([]);
  });

  it('no test file or in-process helper changes the test process for the files after it', () => {
    // Every TypeScript module under test/: test files and the helpers they import, wherever they live.
    const changing = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
      .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
      .map((name) => `test/${name}`)
      .filter((f) => !UNCHECKED.has(f) && changesProcess(readFileSync(join(ROOT, f), 'utf8')));
    expect(changing).toEqual([]);
  });

  it('the change detector sees what it is meant to', () => {
    const changing = ["process.env.RCD_X = '1'", "process.env['A'] = b", 'delete process.env.X', 'process.chdir(dir)', 'vi.useFakeTimers()', "vi.mock('./x.js')", "process.on('exit', f)"];
    for (const source of changing) expect(changesProcess(source), source).toBe(true);
    const leaving = ["process.env.RCD_X === '1'", 'const env = { ...process.env, A: 1 }', 'process.env.NODE_OPTIONS', "process.on('exit', f); process.off('exit', f)"];
    for (const source of leaving) expect(changesProcess(source), source).toBe(false);
  });
});

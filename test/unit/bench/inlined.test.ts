/**
 * bench:cost --inlined (bench/cost/inlined.ts) splits one optimized function's code among the functions
 * TurboFan inlined into it, from V8's --trace-turbo JSON. The trace here is a real one: node compiles
 * a function that calls another module's function in a loop, with tracing on, in a child process.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPerfMap, type FunctionCost } from '../../../bench/cost/callgrind-functions.js';
import { inlinedCosts, matchingTrace, readTurboTrace, renderInlinedTable, type TurboCode } from '../../../bench/cost/inlined.js';

let dir = '';
let code: TurboCode;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rcd-inlined-'));
  writeFileSync(join(dir, 'inner.mjs'), 'export function inner(x) { return (x * 3 + 1) | 0; }\n');
  writeFileSync(
    join(dir, 'outer.mjs'),
    [
      "import { inner } from './inner.mjs';",
      'function outer(x) { let s = 0; for (let i = 0; i < 4; i++) s = (s + inner(x + i)) | 0; return s; }',
      'let t = 0;',
      'for (let i = 0; i < 300000; i++) t = (t + outer(i)) | 0;',
      'console.log(t);',
    ].join('\n'),
  );
  const r = spawnSync(process.execPath, ['--trace-turbo', '--trace-turbo-filter=outer', `--trace-turbo-path=${dir}`, `--trace-turbo-cfg-file=${join(dir, 'turbo.cfg')}`, join(dir, 'outer.mjs')], { encoding: 'utf8' });
  expect(r.status).toBe(0);
  const traces = readdirSync(dir).filter((f) => f.startsWith('turbo-outer-') && f.endsWith('.json'));
  expect(traces.length).toBeGreaterThan(0);
  code = readTurboTrace(readFileSync(join(dir, traces[0]!), 'utf8'));
});

afterAll(() => {
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

/** One instruction's events: `ir` instructions and `misses` code misses. */
function cost(ir: number, misses: number): FunctionCost {
  return { ir, i1mr: misses, d1mr: 0, d1mw: 0, l2: 0 };
}

describe('a --trace-turbo trace of an optimized function', () => {
  it('names the function, its code size and the function inlined into it, and places every run of code', () => {
    expect(code.name).toBe('outer');
    expect(code.size).toBeGreaterThan(100);
    const inlined = [...code.inlined.values()];
    expect(inlined.map((x) => x.name)).toContain('inner');
    // inner is called from outer itself (V8's inlining id -1).
    expect(inlined.find((x) => x.name === 'inner')!.caller).toBe(-1);
    const offsets = code.runs.map((r) => r[0]);
    // One run per offset, in order; the prologue before the first run is no function's.
    expect(offsets.every((o, i) => i === 0 || o > offsets[i - 1]!)).toBe(true);
    expect(offsets[offsets.length - 1]!).toBeLessThan(code.size);
    expect(inlinedCosts(code, new Map([[0, cost(5, 0)]])).map((r) => r.name)).toEqual(offsets[0]! > 0 ? ['(no node)'] : [expect.any(String)]);
    const innerId = [...code.inlined.entries()].find(([, x]) => x.name === 'inner')![0];
    expect(code.runs.some((r) => r[1] === innerId)).toBe(true);
    expect(code.runs.some((r) => r[1] === -1)).toBe(true);
  });

  it('sums each instruction\'s events into the function it was inlined from, and along its callers', () => {
    const innerId = [...code.inlined.entries()].find(([, x]) => x.name === 'inner')![0];
    const costs = new Map<number, FunctionCost>();
    let innerRuns = 0;
    let ownRuns = 0;
    let loose = 0;
    for (const [offset, id] of code.runs) {
      // One instruction at the start of every run: 1 instruction, and a miss on inner's.
      costs.set(offset, cost(1, id === innerId ? 1 : 0));
      if (id === innerId) innerRuns++;
      else if (id === -1) ownRuns++;
      else loose++;
    }
    const rows = inlinedCosts(code, costs);
    const row = (name: string): (typeof rows)[number] => rows.find((r) => r.name === name)!;
    expect(row('inner').self).toEqual(cost(innerRuns, innerRuns));
    expect(row('inner').inclusive).toEqual(cost(innerRuns, innerRuns));
    expect(row('outer').self.ir).toBe(ownRuns);
    // outer's inclusive count holds inner's; code no node owns belongs to no function's.
    const noNode = rows.find((r) => r.name === '(no node)');
    expect(row('outer').inclusive.ir).toBe(code.runs.length - (noNode?.self.ir ?? 0));
    expect(rows.reduce((n, r) => n + r.self.ir, 0)).toBe(innerRuns + ownRuns + loose);
    // Largest self count first; misses shown when there are any.
    expect(rows.map((r) => r.self.ir)).toEqual([...rows.map((r) => r.self.ir)].sort((a, b) => b - a));
    const table = renderInlinedTable(rows, 1).split('\n');
    expect(table[0]).toMatch(/^\s*Ir\s+incl\s+I1 miss\s+D1 miss\s+L2 miss\s+inlined function$/);
    expect(table.some((l) => new RegExp(`^\\s*${innerRuns}\\.0\\s+${innerRuns}\\.0\\s+${innerRuns}\\.0\\s+0\\.0\\s+0\\.0\\s+inner$`).test(l))).toBe(true);
  });

  it('is found for the code the perf map names with the same size, and not for other code', () => {
    const map = (size: number, name = 'outer'): ReturnType<typeof readPerfMap> => readPerfMap(`7f0000001000 ${size.toString(16)} JS:*${name} file://${dir}/outer.mjs:2:1\n7f0000009000 40 JS:~inner file://${dir}/inner.mjs:1:8\n`);
    const found = matchingTrace(dir, 'outer', map(code.size));
    expect(found?.start).toBe(0x7f0000001000);
    expect(found?.code.size).toBe(code.size);
    // Optimized again since the trace (another size), never optimized, or no trace of that name: none.
    expect(matchingTrace(dir, 'outer', map(code.size + 16))).toBeNull();
    expect(matchingTrace(dir, 'outer', map(code.size, 'other'))).toBeNull();
    expect(matchingTrace(join(dir, 'missing'), 'outer', map(code.size))).toBeNull();
  });
});

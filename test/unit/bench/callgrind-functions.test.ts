/**
 * bench:cost --by-function reads callgrind's per-instruction dumps (bench/cost/callgrind-functions.ts): a
 * function's figures are the sum of its own cost lines, a call's inclusive line is not counted twice,
 * compressed names and relative positions resolve, and compiled JavaScript is named from node's perf
 * map. The real dumps are read in test/e2e/bench-smoke.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { UNNAMED_JIT, codeCosts, functionCosts, perfName, readPerfMap, renderFunctionTable } from '../../../bench/cost/callgrind-functions.js';

/** A dump as callgrind writes it with --dump-instr=yes --cache-sim=yes (events in its order). */
const DUMP = `# callgrind format
version: 1
creator: callgrind-3.19.0
positions: instr line
events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
summary: 0

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) v8::internal::JsonParser::Parse()
0x1000 0 10 2 0 1 3 0
+4 0 5 1 1 0 1 1 0 1 0
cob=(2) ???
cfn=(2) 0x0000000000c0ffee
calls=1 0x2000 0
* 0 900 50 40 9 30 20
+2 0 1

ob=(2)
fl=(1)
fn=(2)
0x3000 0 7 0 0 2 4
+16 0 3 0 0 0 1 5 1 0 2
-8 0 2
0x9000 0 100

fn=(3) memcpy
ob=(1)
0x5000 0 4 1 1 0 0 2 0 0 1
`;

const MAP = readPerfMap(['3000 20 JS:*handleContent file:///srv/routes.js:1:1', '2ff0 8 Builtin:Stub', 'ffff unparsable line', ''].join('\n'));

describe('callgrind per-instruction dumps by function', () => {
  it('sums each function\'s own lines (not a call\'s inclusive line) and names JIT code from the perf map', () => {
    const costs = functionCosts(DUMP, MAP);
    expect(costs.get('v8::internal::JsonParser::Parse()')).toEqual({ ir: 10 + 5 + 1, i1mr: 1, d1mr: 3 + 1, d1mw: 0 + 1, l2: 1 });
    expect(costs.get('JS JS:*handleContent file:///srv/routes.js:1:1')).toEqual({ ir: 7 + 3 + 2, i1mr: 2, d1mr: 4 + 1, d1mw: 0 + 5, l2: 1 + 2 });
    expect(costs.get(`JS ${UNNAMED_JIT}`)).toEqual({ ir: 100, i1mr: 0, d1mr: 0, d1mw: 0, l2: 0 });
    expect(costs.get('memcpy')).toEqual({ ir: 4, i1mr: 0, d1mr: 0, d1mw: 2, l2: 1 });
    expect(costs.size).toBe(4);
  });

  it('reads only Ir from a dump without the cache simulator, and names nothing it cannot place', () => {
    const plain = DUMP.replace('events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw', 'events: Ir').replace(/^(0x[0-9a-f]+|[+-]\d+|\*) 0 (\d+).*$/gm, '$1 0 $2');
    const costs = functionCosts(plain, null);
    expect(costs.get(`JS ${UNNAMED_JIT}`)).toEqual({ ir: 112, i1mr: 0, d1mr: 0, d1mw: 0, l2: 0 });
    // Without misses the table lists the most instructions first, under the same total row.
    const table = renderFunctionTable(costs, 1, 2).split('\n');
    expect(table[0]).toMatch(/^\s*Ir\s+function$/);
    expect(table[1]).toMatch(/^\s*132\s+\(every function\)$/);
    expect(table[2]).toMatch(/^\s*112\s+JS JavaScript/);
    expect(table[3]).toMatch(/^\s*16\.0\s+v8::internal::JsonParser::Parse\(\)$/);
    expect(perfName(MAP, 0x2ff0)).toBe('Builtin:Stub');
    expect(perfName(MAP, 0x3020)).toBeNull();
  });

  it('lists the functions with the most data misses first, per request, under a total of all of them', () => {
    const table = renderFunctionTable(functionCosts(DUMP, MAP), 2, 2).split('\n');
    expect(table[0]).toMatch(/^\s*Ir\s+I1 miss\s+D1 read miss\s+D1 write miss\s+L2 miss\s+function$/);
    expect(table[1]).toMatch(/^\s*66\.0\s+1\.5\s+4\.5\s+4\.0\s+2\.5\s+\(every function\)$/);
    expect(table[2]).toMatch(/\s6\.0\s+1\.0\s+2\.5\s+2\.5\s+1\.5\s+JS JS:\*handleContent/);
    expect(table[3]).toMatch(/\s8\.0\s+0\.5\s+2\.0\s+0\.5\s+0\.5\s+v8::internal::JsonParser::Parse\(\)$/);
    expect(table).toHaveLength(5);
  });

  it('gives each instruction of one JIT code object its own events, by offset, and nothing outside it', () => {
    // --inlined (bench/cost/inlined.ts) splits these among the functions inlined into the code.
    const costs = codeCosts(DUMP, 0x3000, 0x20);
    expect([...costs.keys()].sort((a, b) => a - b)).toEqual([0, 8, 16]);
    expect(costs.get(0)).toEqual({ ir: 7, i1mr: 2, d1mr: 4, d1mw: 0, l2: 0 });
    expect(costs.get(8)).toEqual({ ir: 2, i1mr: 0, d1mr: 0, d1mw: 0, l2: 0 });
    expect(costs.get(16)).toEqual({ ir: 3, i1mr: 0, d1mr: 1, d1mw: 5, l2: 3 });
    // Native code at those addresses is not JIT code; nothing of 0x9000 (past the code's end) is read.
    expect(codeCosts(DUMP, 0x1000, 0x10).size).toBe(0);
    expect(codeCosts(DUMP, 0x3000, 0x10).has(16)).toBe(false);
  });
});

/**
 * Where a counted window's instructions and L1 misses go, function by function, JavaScript included
 * (`npm run bench:cost -- --by-function N`). callgrind names native functions itself; V8's compiled
 * JavaScript is anonymous to it (object `???`), so each of its instructions is named from the map
 * node writes with `--perf-basic-prof` (/tmp/perf-PID.map: start, size and name of each code object).
 * That needs the dump per instruction (`--dump-instr=yes`): a JIT function has no symbol to group by.
 *
 * The dump format (valgrind's callgrind format): `ob=`, `fl=`, `fn=` set the object, file and
 * function of the cost lines after them, names compressed as `(id) name` the first time and `(id)`
 * after; a cost line is `position line events...`, a position absolute (`0x...`), relative (`+n`,
 * `-n`) or the same as the last (`*`); the line after `calls=` is the inclusive cost of a call made
 * there, already counted in the callee, so it is skipped.
 */
import { readFileSync } from 'node:fs';
import { L2_EVENTS } from './callgrind.js';

/** One function's events in a dump, summed over its instructions. */
export interface FunctionCost {
  ir: number;
  i1mr: number;
  d1mr: number;
  d1mw: number;
  /** Second-level misses, code and data (the L2_EVENTS summed). */
  l2: number;
}

/** Code objects of a perf map, sorted by start address. */
export interface PerfMap {
  readonly starts: readonly number[];
  readonly sizes: readonly number[];
  readonly names: readonly string[];
}

/** Reads node's /tmp/perf-PID.map; a code object moved or replaced later keeps its last line's name. */
export function readPerfMap(text: string): PerfMap {
  const rows: [number, number, string][] = [];
  for (const line of text.split('\n')) {
    const m = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (m !== null) rows.push([parseInt(m[1]!, 16), parseInt(m[2]!, 16), m[3]!]);
  }
  rows.sort((a, b) => a[0] - b[0]);
  return { starts: rows.map((r) => r[0]), sizes: rows.map((r) => r[1]), names: rows.map((r) => r[2]) };
}

/** The name of the code object holding `address`, or null. */
export function perfName(map: PerfMap, address: number): string | null {
  let lo = 0;
  let hi = map.starts.length - 1;
  let at = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (map.starts[mid]! <= address) {
      at = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  // Code objects may overlap in the map (code freed and its space reused): the nearest start that
  // covers the address, looking back a few entries.
  for (let i = at; i >= 0 && i > at - 8; i--) if (address < map.starts[i]! + map.sizes[i]!) return map.names[i]!;
  return null;
}

/** The name JIT code without a map entry is grouped under. */
export const UNNAMED_JIT = 'JavaScript (not in the perf map)';

/**
 * Calls `visit` with every cost line of a dump written with `--dump-instr=yes`: the object and
 * function it belongs to, the instruction's address and its events (Ir, I1mr, D1mr, D1mw, and the
 * L2_EVENTS summed), in a FunctionCost reused from call to call.
 */
function forEachCost(dump: string, visit: (ob: string, fn: string, address: number, cost: FunctionCost) => void): void {
  const names: Record<'ob' | 'fn', Map<string, string>> = { ob: new Map(), fn: new Map() };
  const named = (kind: 'ob' | 'fn', value: string): string => {
    const m = /^\((\d+)\)(?: (.*))?$/.exec(value);
    if (m === null) return value;
    if (m[2] !== undefined) names[kind].set(m[1]!, m[2]);
    return names[kind].get(m[1]!) ?? '?';
  };
  let columns: Record<'ir' | 'i1mr' | 'd1mr' | 'd1mw', number> = { ir: -1, i1mr: -1, d1mr: -1, d1mw: -1 };
  let l2Columns: number[] = [];
  let positions = 1;
  let ob = '';
  let fn = '';
  let address = 0;
  let skipNext = false;
  const line: FunctionCost = { ir: 0, i1mr: 0, d1mr: 0, d1mw: 0, l2: 0 };
  for (const text of dump.split('\n')) {
    if (text.length === 0) continue;
    const c = text.charCodeAt(0);
    const isCost = (c >= 48 && c <= 57) || c === 43 || c === 45 || c === 42; // digit + - *
    if (isCost) {
      const parts = text.split(' ');
      const p = parts[0]!;
      if (p.startsWith('0x')) address = parseInt(p, 16);
      else if (p[0] === '+') address += Number(p.slice(1));
      else if (p[0] === '-') address -= Number(p.slice(1));
      if (skipNext) {
        skipNext = false;
        continue;
      }
      for (const key of ['ir', 'i1mr', 'd1mr', 'd1mw'] as const) {
        const col = columns[key];
        line[key] = col >= 0 ? Number(parts[positions + col] ?? 0) : 0;
      }
      line.l2 = 0;
      for (const col of l2Columns) if (col >= 0) line.l2 += Number(parts[positions + col] ?? 0);
      visit(ob, fn, address, line);
      continue;
    }
    if (text.startsWith('ob=')) ob = named('ob', text.slice(3));
    else if (text.startsWith('fn=')) fn = named('fn', text.slice(3));
    else if (text.startsWith('cob=')) named('ob', text.slice(4));
    else if (text.startsWith('cfn=')) named('fn', text.slice(4));
    else if (text.startsWith('calls=')) skipNext = true;
    else if (text.startsWith('positions:')) positions = text.slice(10).trim().split(/\s+/).length;
    else if (text.startsWith('events:')) {
      const events = text.slice(7).trim().split(/\s+/);
      columns = { ir: events.indexOf('Ir'), i1mr: events.indexOf('I1mr'), d1mr: events.indexOf('D1mr'), d1mw: events.indexOf('D1mw') };
      l2Columns = L2_EVENTS.map((e) => events.indexOf(e));
    }
  }
}

/** Adds `from`'s events to `to`'s. */
export function addCost(to: FunctionCost, from: FunctionCost): void {
  to.ir += from.ir;
  to.i1mr += from.i1mr;
  to.d1mr += from.d1mr;
  to.d1mw += from.d1mw;
  to.l2 += from.l2;
}

/** A FunctionCost of zeros. */
export function noCost(): FunctionCost {
  return { ir: 0, i1mr: 0, d1mr: 0, d1mw: 0, l2: 0 };
}

/**
 * Per-function events of a dump written with `--dump-instr=yes`, in the order of its `events:` line
 * (Ir, and with the cache simulator I1mr, D1mr, D1mw and L2_EVENTS among them). JIT code (object `???`) is named
 * `JS <name from the perf map>`.
 */
export function functionCosts(dump: string, map: PerfMap | null): Map<string, FunctionCost> {
  const out = new Map<string, FunctionCost>();
  forEachCost(dump, (ob, fn, address, line) => {
    const name = ob === '???' ? `JS ${(map === null ? null : perfName(map, address)) ?? UNNAMED_JIT}` : fn;
    let cost = out.get(name);
    if (cost === undefined) {
      cost = noCost();
      out.set(name, cost);
    }
    addCost(cost, line);
  });
  return out;
}

/** The events of each instruction of JIT code in [start, start + size) of a dump, by offset from start. */
export function codeCosts(dump: string, start: number, size: number): Map<number, FunctionCost> {
  const out = new Map<number, FunctionCost>();
  forEachCost(dump, (ob, _fn, address, line) => {
    if (ob !== '???' || address < start || address >= start + size) return;
    let cost = out.get(address - start);
    if (cost === undefined) {
      cost = noCost();
      out.set(address - start, cost);
    }
    addCost(cost, line);
  });
  return out;
}

/** The `top` functions of a dump by L1 data misses (with the cache simulator) or instructions, per request. */
export function renderFunctionTable(costs: Map<string, FunctionCost>, requests: number, top: number): string {
  const rows = [...costs.entries()];
  const misses = rows.some(([, c]) => c.d1mr + c.d1mw + c.i1mr > 0);
  rows.sort((a, b) => (misses ? b[1].d1mr + b[1].d1mw - (a[1].d1mr + a[1].d1mw) : b[1].ir - a[1].ir));
  const total = noCost();
  for (const [, c] of rows) addCost(total, c);
  const fmt = (n: number): string => (n / requests).toFixed(n / requests >= 100 ? 0 : 1);
  const head = misses ? ['Ir', 'I1 miss', 'D1 read miss', 'D1 write miss', 'L2 miss', 'function'] : ['Ir', 'function'];
  const cells = (name: string, c: FunctionCost): string[] => (misses ? [fmt(c.ir), fmt(c.i1mr), fmt(c.d1mr), fmt(c.d1mw), fmt(c.l2), name] : [fmt(c.ir), name]);
  const body = [cells('(every function)', total), ...rows.slice(0, top).map(([name, c]) => cells(name.length > 120 ? name.slice(0, 117) + '...' : name, c))];
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: readonly string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n') + '\n';
}

/** functionCosts of a dump file, its JIT code named from the perf map file when there is one. */
export function functionCostsOfFiles(dumpFile: string, perfMapFile: string | null): Map<string, FunctionCost> {
  let map: PerfMap | null = null;
  if (perfMapFile !== null) {
    try {
      map = readPerfMap(readFileSync(perfMapFile, 'utf8'));
    } catch {
      map = null;
    }
  }
  return functionCosts(readFileSync(dumpFile, 'utf8'), map);
}

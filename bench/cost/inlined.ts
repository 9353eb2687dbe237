/**
 * Where the instructions and misses of one optimized function go among the functions TurboFan inlined
 * into it (`npm run bench:cost -- --inlined NAME`). callgrind and the perf map see one code object;
 * its source is a dozen functions from as many modules. V8's `--trace-turbo` writes, per optimization,
 * a JSON (turbo-NAME-ID.json) holding what that code is made of:
 * - the phase "V8.TFSelectInstructions": per graph node, the machine instructions selected for it
 *   (`nodeIdToInstructionRange`, [first, end) in instruction numbers);
 * - the phase "code generation": per instruction number, where its code starts
 *   (`instructionOffsetToPCOffset`; numbers follow the blocks, not the addresses);
 * - `nodePositions`: per node, its source position and the inlining it came from (-1: the function
 *   itself), and `inlinings` / `sources`: per inlining, the function inlined and where it was called.
 * So each code offset belongs to one inlining, and callgrind's per-instruction dump
 * (callgrind-functions.ts codeCosts) gives each offset its events: summed per inlined function (self)
 * and along the chain of its callers (inclusive). The code is matched to the dump through node's perf
 * map by name and size: a function optimized more than once has a JSON per optimization.
 *
 * "(no node)" is code no graph node owns: the prologue and stack check, jumps between blocks, and the
 * register allocator's moves and spills.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { addCost, noCost, type FunctionCost, type PerfMap } from './callgrind-functions.js';

/** No graph node owns the code (prologue, jumps, moves). */
const NO_NODE = -2;
/** The optimized function's own code (V8's inlining id for it). */
const OWN = -1;

export interface TurboCode {
  readonly name: string;
  /** Bytes of machine code (the perf map's size of the same code). */
  readonly size: number;
  /**
   * [start offset, inlining id] of each run of code, by offset (no two at one); a run ends where the
   * next starts. Code before the first (the prologue) and runs of id NO_NODE belong to no function.
   */
  readonly runs: readonly (readonly [number, number])[];
  /** The function inlined as each inlining id, and the inlining it was called from. */
  readonly inlined: ReadonlyMap<number, { readonly name: string; readonly caller: number }>;
}

interface TurboPhase {
  readonly name: string;
  readonly nodeIdToInstructionRange?: Record<string, [number, number]>;
  readonly instructionOffsetToPCOffset?: Record<string, { readonly gap: number }>;
  readonly data?: string;
  readonly type?: string;
}

interface TurboJson {
  readonly function: { readonly functionName: string };
  readonly phases: readonly TurboPhase[];
  readonly nodePositions: Record<string, { readonly inliningId: number }>;
  readonly inlinings: Record<string, { readonly sourceId: number; readonly inliningPosition: { readonly inliningId: number } }>;
  readonly sources: Record<string, { readonly functionName: string; readonly sourceName: string; readonly startPosition: number }>;
}

/**
 * Reads one --trace-turbo JSON. V8 writes the bytecode listings at its end without escaping every
 * character JSON needs escaped; nothing here needs them, so they are cut off first.
 */
export function readTurboTrace(text: string): TurboCode {
  const cut = text.indexOf('"bytecodeSources"');
  const json = JSON.parse(cut < 0 ? text : text.slice(0, text.lastIndexOf(',', cut)) + '}') as TurboJson;
  const phase = (name: string): TurboPhase => {
    const p = json.phases.find((x) => x.name === name);
    if (p === undefined) throw new Error(`the trace of ${json.function.functionName} has no phase "${name}"`);
    return p;
  };
  const select = phase('V8.TFSelectInstructions').nodeIdToInstructionRange ?? {};
  const pcs = phase('code generation').instructionOffsetToPCOffset ?? {};
  const disassembly = json.phases.find((p) => p.type === 'disassembly')?.data ?? '';
  const size = /Instructions \(size = (\d+)\)/.exec(disassembly);
  if (size === null) throw new Error(`the trace of ${json.function.functionName} has no disassembly`);
  // Each instruction number's node: the one with the narrowest range over it (a node selects one or
  // a few instructions; wider ranges are nodes whose code is spread, such as a call's frame state).
  const owner = new Map<number, [node: number, width: number]>();
  for (const [node, [first, end]] of Object.entries(select)) {
    for (let i = first; i < end; i++) {
      const known = owner.get(i);
      if (known === undefined || end - first < known[1]) owner.set(i, [Number(node), end - first]);
    }
  }
  const runs: [number, number][] = [];
  for (const [instruction, pc] of Object.entries(pcs)) {
    const node = owner.get(Number(instruction));
    runs.push([pc.gap, node === undefined ? NO_NODE : (json.nodePositions[String(node[0])]?.inliningId ?? NO_NODE)]);
  }
  // Instructions are numbered in block order, not by address. An instruction that made no code
  // starts where the next one does: of several at one offset, the last (by number) owns what follows.
  runs.sort((a, b) => a[0] - b[0]);
  const distinct = runs.filter((r, i) => i === runs.length - 1 || runs[i + 1]![0] !== r[0]);
  const inlined = new Map<number, { name: string; caller: number }>();
  for (const [id, inlining] of Object.entries(json.inlinings)) {
    const source = json.sources[String(inlining.sourceId)];
    const file = source?.sourceName.split('/').pop() ?? '?';
    inlined.set(Number(id), { name: source === undefined ? '?' : source.functionName || `(anonymous, ${file}:${source.startPosition})`, caller: inlining.inliningPosition.inliningId });
  }
  return { name: json.function.functionName, size: Number(size[1]), runs: distinct, inlined };
}

/** The inlining id of the code at `offset` (NO_NODE before the first run). */
function inliningAt(code: TurboCode, offset: number): number {
  let lo = 0;
  let hi = code.runs.length - 1;
  let at = NO_NODE;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (code.runs[mid]![0] <= offset) {
      at = code.runs[mid]![1];
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return at;
}

export interface InlinedRow {
  readonly name: string;
  /** Events of the code inlined from this function, not counting what it inlined in turn. */
  readonly self: FunctionCost;
  /** With what it inlined (every inlining of the same function summed). */
  readonly inclusive: FunctionCost;
}

/** Per inlined function (by name; the function itself under its own name), the events of its code. */
export function inlinedCosts(code: TurboCode, costs: ReadonlyMap<number, FunctionCost>): InlinedRow[] {
  const nameOf = (id: number): string => (id === OWN ? code.name : id === NO_NODE ? '(no node)' : (code.inlined.get(id)?.name ?? '?'));
  const rows = new Map<string, { self: FunctionCost; inclusive: FunctionCost }>();
  const row = (name: string): { self: FunctionCost; inclusive: FunctionCost } => {
    let r = rows.get(name);
    if (r === undefined) {
      r = { self: noCost(), inclusive: noCost() };
      rows.set(name, r);
    }
    return r;
  };
  for (const [offset, cost] of costs) {
    const id = inliningAt(code, offset);
    addCost(row(nameOf(id)).self, cost);
    // Each function once along the chain (a function inlined into itself is not counted twice).
    const chain = new Set<string>([nameOf(id)]);
    if (id !== NO_NODE) {
      chain.add(code.name);
      for (let at = id; at !== OWN && at !== NO_NODE; at = code.inlined.get(at)?.caller ?? OWN) chain.add(nameOf(at));
    }
    for (const name of chain) addCost(row(name).inclusive, cost);
  }
  return [...rows.entries()].map(([name, r]) => ({ name, self: r.self, inclusive: r.inclusive })).sort((a, b) => b.self.ir - a.self.ir);
}

/**
 * The trace of the code of `name` whose size matches the perf map's last optimized (`*`) entry of that
 * name, with that entry's start address; null when none matches (not optimized in the counted process,
 * or optimized again after the trace).
 */
export function matchingTrace(dir: string, name: string, map: PerfMap): { code: TurboCode; start: number } | null {
  let start = -1;
  let size = -1;
  for (let i = 0; i < map.names.length; i++) {
    if (map.names[i]!.startsWith(`JS:*${name} `)) {
      start = map.starts[i]!;
      size = map.sizes[i]!;
    }
  }
  if (start < 0) return null;
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.startsWith(`turbo-${name}-`) && f.endsWith('.json'));
  } catch {
    return null;
  }
  for (const f of files) {
    const code = readTurboTrace(readFileSync(join(dir, f), 'utf8'));
    if (code.size === size && code.name === name) return { code, start };
  }
  return null;
}

/** The rows as a table, per request, largest self instruction count first (rows under half an instruction a request left out). */
export function renderInlinedTable(rows: readonly InlinedRow[], requests: number): string {
  const misses = rows.some((r) => r.self.i1mr + r.self.d1mr + r.self.d1mw > 0);
  const fmt = (n: number): string => (n / requests).toFixed(n / requests >= 100 ? 0 : 1);
  const head = misses ? ['Ir', 'incl', 'I1 miss', 'D1 miss', 'L2 miss', 'inlined function'] : ['Ir', 'incl', 'inlined function'];
  const body = rows
    .filter((r) => r.self.ir / requests >= 0.5)
    .map((r) => (misses ? [fmt(r.self.ir), fmt(r.inclusive.ir), fmt(r.self.i1mr), fmt(r.self.d1mr + r.self.d1mw), fmt(r.self.l2), r.name] : [fmt(r.self.ir), fmt(r.inclusive.ir), r.name]));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: readonly string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padStart(widths[i]!))).join('  ');
  return [line(head), ...body.map(line)].join('\n') + '\n';
}

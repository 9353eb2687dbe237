/**
 * The timing loop every micro-benchmark group uses: warm-up, then fn(i) over a rotating index until
 * minMs has elapsed, in batches so the clock is read rarely. Slow operations (a whole-document
 * render) get batches of one so minMs still bounds the run.
 */
import v8 from 'node:v8';

export interface Row {
  name: string;
  opsPerSec: number;
  nsPerOp: number;
  /** JS heap bytes allocated per call (measureWithBytes), null when not measured or not measurable. */
  bytesPerOp: number | null;
}

export const MIN_MS = 1000;
export const WARMUP_MS = 200;

// Written by every measured call so that the JIT cannot drop the work as dead code.
let sink: unknown = null;

export function measure(name: string, fn: (i: number) => unknown, minMs: number = MIN_MS): Row {
  const run = (ms: number, batch: number): { ops: number; ns: number } => {
    const start = process.hrtime.bigint();
    const limit = BigInt(ms) * 1_000_000n;
    let ops = 0;
    let now = start;
    while (now - start < limit) {
      for (let i = 0; i < batch; i++) sink = fn(ops + i);
      ops += batch;
      now = process.hrtime.bigint();
    }
    return { ops, ns: Number(now - start) };
  };
  const probe = run(20, 1);
  const batch = probe.ns / probe.ops > 100_000 ? 1 : 256;
  run(Math.min(WARMUP_MS, minMs), batch);
  const { ops, ns } = run(minMs, batch);
  const nsPerOp = ns / ops;
  return { name, opsPerSec: Math.round(1e9 / nsPerOp), nsPerOp: Math.round(nsPerOp * 10) / 10, bytesPerOp: null };
}

/**
 * measure() plus the JS heap bytes one call allocates: the median, over 15 runs of 128 calls each
 * between full collections, of the heap growth per call. Runs during which a scavenge shrank the heap
 * are discarded. Needs node --expose-gc (`npm run bench:micro` passes it); otherwise bytes stay null.
 */
export function measureWithBytes(name: string, fn: (i: number) => unknown, minMs: number = MIN_MS): Row {
  const row = measure(name, fn, minMs);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) return row;
  const calls = 128;
  const samples: number[] = [];
  for (let run = 0; run < 15; run++) {
    gc();
    const before = v8.getHeapStatistics().used_heap_size;
    for (let i = 0; i < calls; i++) sink = fn(run * calls + i);
    const after = v8.getHeapStatistics().used_heap_size;
    if (after >= before) samples.push((after - before) / calls);
  }
  if (samples.length === 0) return row;
  samples.sort((a, b) => a - b);
  return { ...row, bytesPerOp: Math.round(samples[samples.length >> 1]!) };
}

/** The last value a measured call returned (keeps `sink` observable). */
export function lastResult(): unknown {
  return sink;
}

/** A Markdown table of rows under a heading. */
export function formatTable(title: string, rows: readonly Row[]): string {
  const withBytes = rows.some((r) => r.bytesPerOp !== null);
  const lines = [`### ${title}`, '', `| benchmark | ops/s | ns/op |${withBytes ? ' B/op |' : ''}`, `|---|---:|---:|${withBytes ? '---:|' : ''}`];
  for (const r of rows) {
    const bytes = withBytes ? ` ${r.bytesPerOp === null ? 'n/a' : r.bytesPerOp.toLocaleString('en-US')} |` : '';
    lines.push(`| ${r.name} | ${r.opsPerSec.toLocaleString('en-US')} | ${r.nsPerOp.toLocaleString('en-US')} |${bytes}`);
  }
  return lines.join('\n') + '\n';
}

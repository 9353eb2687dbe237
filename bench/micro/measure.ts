/**
 * The timing loop every micro-benchmark group uses: warm-up, then fn(i) over a rotating index until
 * minMs has elapsed, in batches so the clock is read rarely. Slow operations (a whole-document
 * render) get batches of one so minMs still bounds the run.
 */
export interface Row {
  name: string;
  opsPerSec: number;
  nsPerOp: number;
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
  return { name, opsPerSec: Math.round(1e9 / nsPerOp), nsPerOp: Math.round(nsPerOp * 10) / 10 };
}

/** The last value a measured call returned (keeps `sink` observable). */
export function lastResult(): unknown {
  return sink;
}

/** A Markdown table of rows under a heading. */
export function formatTable(title: string, rows: readonly Row[]): string {
  const lines = [`### ${title}`, '', '| benchmark | ops/s | ns/op |', '|---|---:|---:|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.opsPerSec.toLocaleString('en-US')} | ${r.nsPerOp.toLocaleString('en-US')} |`);
  return lines.join('\n') + '\n';
}

/**
 * V8 heap sizing for `rcd serve`, and which threads do its collections.
 *
 * Why: under steady load the main thread allocates a few hundred bytes per request, almost all of it
 * dead by the next scavenge. V8 still doubles its young generation each time the bytes that survived
 * scavenges add up to its capacity, and at 16 MiB semi-spaces (Node 20's ceiling) the old generation
 * (~10 MiB live here) is left with less headroom than the young generation holds, so V8 starts an
 * incremental mark-compact right after every mark-compact: RSS grows and mark-compacts run one after
 * another. Held, the young generation stays small and mark-compacts are rare.
 *
 * V8 sizes its heaps when an isolate is created, so the maximum cannot change at run time; the growth
 * factor can (V8 reads it each time it would grow the young generation). The flag is process-wide,
 * but starting a worker thread puts it back to its default (test/unit/runtime/heap.test.ts shows both), so
 * the main thread sets it before the pool starts and every worker sets it again when it loads. The
 * young generation then never grows past the size it had when the flag was set, and in practice it
 * runs at V8's initial 1 MiB semi-spaces: a few seconds after startup, V8's memory reducer runs a
 * "reduce" mark-compact on the idle process that shrinks the young generation back to its initial
 * size (seen with --trace-gc; the same happens after any idle spell), and a held one
 * does not grow back: under load, short scavenges at a steady rate. Growing it at run time does not
 * last for that reason; V8 takes a floor only when the isolate is created (`--min-semi-space-size`,
 * node's command line only: NODE_OPTIONS refuses it). A larger young generation buys little
 * throughput for more RSS: an operator's choice (README), not the default.
 *
 * An operator who sizes the young generation themselves (`--max-semi-space-size` and friends in
 * NODE_OPTIONS or on the node command line) keeps their choice: nothing is changed then.
 */
import v8 from 'node:v8';

const OPERATOR_FLAG = /--(?:max|min)[-_]semi[-_]space[-_]size|--semi[-_]space[-_]growth[-_]factor/;

/** True when the operator set the young generation's size through node's flags. */
export function operatorSizedYoungGeneration(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  if (execArgv.some((arg) => OPERATOR_FLAG.test(arg))) return true;
  return nodeOptions !== undefined && OPERATOR_FLAG.test(nodeOptions);
}

/** Stops the young generation from growing beyond its current size (this isolate and the others). */
export function holdYoungGeneration(): void {
  v8.setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * What the start-up log says about V8's collector threads. V8 shares the work of a collection that
 * stops a thread (scavenges, a full collection's marking, compaction and pointer updating) with one
 * pool of helper threads for the whole process, at its base priority: below the delivery loops
 * (src/runtime/priority.ts). A loop stopped for a collection then waits until those helpers get a
 * core, behind everything else at the base priority: most of such a pause is waiting, not
 * collecting. `node --single-threaded-gc` has each thread
 * collect its own heap at its own priority; it must be given to node itself (V8 fails a check when
 * its marking flags change in a running process, and NODE_OPTIONS refuses them), so `npm start`,
 * bin/rcd.js's first line and the systemd unit pass it; throughput is the same.
 */
export function gcThreadsDescription(execArgv: readonly string[]): string {
  if (execArgv.some((arg) => /^--single[-_]threaded(?:[-_]gc)?$/.test(arg))) return 'garbage collection: each thread collects its own heap (node --single-threaded-gc)';
  return "garbage collection: V8's helper threads share each collection at the process's priority, which can hold a delivery loop up (start node with --single-threaded-gc: docs/operations.md, \"CPU priority\")";
}

/**
 * TurboFan's inlining budget for `rcd serve`.
 *
 * Why: a request crosses a chain of small and middle-sized functions (the route handler, the body's
 * end, the rule program, the answer's writers and its header block). V8 11.3 (Node 20) inlines a
 * callee only when its bytecode is at most 460 bytes and stops inlining into a function once 920
 * bytes were inlined into it, so most of that chain stays separate calls. Each call loads the
 * callee's binding and checks it, then its JSFunction and its Code object, and enters a frame; those
 * objects are seldom in the cache when a request comes, so the loads miss it.
 *
 * With a callee of up to 1,500 bytes and 4,000 bytes a function, more of the chain is inlined and a
 * request runs fewer instructions and misses the cache less; a larger budget gains nothing more. The
 * cost is larger optimized code for the few functions that are hot (compiled on V8's background
 * thread), which does not show in the server's RSS.
 *
 * V8 reads these flags each time it optimizes a function, so setting them when the server starts,
 * before the delivery code runs hot, is enough; they are process-wide and stay set when worker
 * threads start (unlike the young generation's growth factor, src/runtime/heap.ts). An operator who
 * sets any of them on node's command line keeps their values: nothing is changed then (NODE_OPTIONS
 * refuses these flags).
 */
import v8 from 'node:v8';

/** The flags set, in V8's spelling (`node --v8-options` lists them with their defaults). */
export const INLINING_FLAGS: readonly string[] = ['--max-inlined-bytecode-size=1500', '--max-inlined-bytecode-size-cumulative=4000'];

const OPERATOR_FLAG = /--max[-_]inlined[-_]bytecode[-_]size/;

/** True when the operator set an inlining budget on node's command line (`process.execArgv`). */
export function operatorSetInlining(execArgv: readonly string[]): boolean {
  return execArgv.some((arg) => OPERATOR_FLAG.test(arg));
}

/** Raises TurboFan's inlining budget (INLINING_FLAGS) for the whole process. */
export function widenInlining(): void {
  for (const flag of INLINING_FLAGS) v8.setFlagsFromString(flag);
}

/** What the start-up log says about the inlining budget. */
export function inliningDescription(widened: boolean): string {
  return widened
    ? `inlining: ${INLINING_FLAGS.join(' ')} (src/runtime/inlining.ts)`
    : "inlining: the operator's V8 flags (--max-inlined-bytecode-size…) are kept";
}

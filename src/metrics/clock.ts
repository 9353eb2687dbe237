/**
 * The monotonic clock of a request's latency (milliseconds, fractional; only differences mean
 * anything). HOT PATH: read twice a content request, when it is taken and when it is answered.
 *
 * process.hrtime rather than performance.now: both read uv_hrtime, but performance.now first checks
 * its receiver's brand (node's validateInternalField: Object.prototype.hasOwnProperty, a builtin
 * TurboFan calls instead of inlining). hrtime's pair is made where this function is inlined and
 * taken apart at once, so TurboFan keeps it out of the heap.
 */

// Bound at load: an import is a cell TurboFan reads and compares before each call it inlines (src/delivery/request.ts).
const hrtime = process.hrtime;

export function nowMs(): number {
  const t = hrtime();
  return t[0] * 1e3 + t[1] / 1e6;
}

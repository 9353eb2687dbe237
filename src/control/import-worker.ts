/**
 * The import thread (a one-thread Piscina pool of the control thread, src/control/import-pool.ts):
 * turns an admin import's body into a PreparedImport (bundle.ts: UTF-8, JSON, shape, ids, every text
 * compiled and hashed, every mapping checked) at a lower CPU priority than delivery.
 *
 * Why a thread of its own: on a box whose cores delivery keeps busy, a large import's parsing and
 * checking at the priority of delivery would leave the loops waiting for a core. The nice value
 * is per thread (src/runtime/priority.ts), so lowering this one leaves the control thread, and with
 * it single writes and their propagation, at the priority of delivery.
 */
import { getPriority } from 'node:os';
import { workerData } from 'piscina';
import { RcdError } from '../runtime/errors.js';
import { holdYoungGeneration } from '../runtime/heap.js';
import { lowerThreadPriority } from '../runtime/priority.js';
import { parseJsonBytes } from '../shared/json-body.js';
import { prepareImport } from '../store/bundle/bundle.js';
import { setContentLimits } from '../store/jsonc.js';
import type { ImportOutcome, ImportTask, ImportWorkerOptions } from './import-protocol.js';

const options = workerData as ImportWorkerOptions;
// Starting this thread put V8's process-wide growth factor back to its default, delivery loops
// included (a loop's scavenges then grow longer during an import): set it again.
if (options.holdYoungGeneration) holdYoungGeneration();
// Where the system refuses (or off Linux), every outcome's `nice` says so to the pool.
lowerThreadPriority(options.niceIncrement);
setContentLimits(options.contentLimits);

export default function prepare(task: ImportTask): ImportOutcome {
  const nice = getPriority(0);
  try {
    return { ok: true, prepared: prepareImport(parseJsonBytes(task.body)), nice };
  } catch (err) {
    if (err instanceof RcdError) return { ok: false, code: err.code, message: err.message, details: err.details, nice };
    return { ok: false, code: 'internal', message: err instanceof Error ? err.message : String(err), details: undefined, nice };
  }
}

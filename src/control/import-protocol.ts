/**
 * Everything the control thread and its import thread exchange (src/control/import-pool.ts and
 * import-worker.ts both import this module): the worker's start options, one task per admin import
 * (the request body), and its outcome. Errors travel as values: a thrown RcdError would reach the
 * control thread without its class, code or details.
 */
import type { ErrorCode } from '../runtime/errors.js';
import type { PreparedImport } from '../store/import-plan.js';
import type { ContentLimits } from '../shared/json-limits.js';

export interface ImportWorkerOptions {
  /** Added to the thread's nice value when it starts (0: the priority of the control thread). */
  readonly niceIncrement: number;
  /** Hold V8's young generation again (src/runtime/heap.ts): this thread's start undid it for the whole process. */
  readonly holdYoungGeneration: boolean;
  /** The configured limits of stored content (--max-content-depth and the rest). */
  readonly contentLimits: ContentLimits;
}

export interface ImportTask {
  /** The admin request's body, copied to the thread. */
  readonly body: Uint8Array;
}

export type ImportOutcome =
  | {
      readonly ok: true;
      readonly prepared: PreparedImport;
      /** The thread's nice value as it read it, so the control thread can say whether lowering it took. */
      readonly nice: number;
    }
  | {
      readonly ok: false;
      readonly code: ErrorCode;
      readonly message: string;
      readonly details: unknown;
      readonly nice: number;
    };

/**
 * The plan of an import: a bundle checked for everything that needs no store (bundle/bundle.ts) and
 * the scheduled changes and rollouts it brings (schedule/bundle.ts), and who records them. Types
 * only, so the Store interface (types.ts) names them without importing the code that makes or
 * writes them.
 */
import type { CompiledContent } from './jsonc.js';
import type { BundleProblem } from './bundle/problems.js';
import type { ChangeOp } from './schedule/change-op.js';
import type { ScheduleLimits } from './schedule/limits.js';

export interface PlannedRevision {
  readonly text: string;
  readonly minAppVersion: string | null;
  /** What is stored beside the text; the parsed value stays in the thread that planned it. */
  readonly compiled: Pick<CompiledContent, 'minified' | 'hash'>;
}

export interface PlannedContent {
  readonly id: string;
  readonly idLower: string;
  readonly revisions: PlannedRevision[];
  /** Whether the entry says anything about the mapping. */
  readonly setsMapping: boolean;
  /** null removes the mapping. */
  readonly mappingJson: string | null;
  readonly ruleCount: number;
}

export interface PlannedEnvironment {
  readonly envId: string;
  readonly keyDigests: string[];
  readonly contents: PlannedContent[];
}

/** A key the bundle lists whose owner in the store is checked when the plan is written. */
export interface KeyCheck {
  readonly digest: string;
  readonly envId: string;
  /** JSON Pointer of the key in the bundle. */
  readonly path: string;
  /** Where its problem, if any, goes among PreparedImport.problems: the order a one-pass check reports. */
  readonly at: number;
}

/**
 * A bundle checked for everything that needs no store (shape, ids, keys' form, every text, every
 * mapping against its content) and planned. Plain data, so it crosses threads: the admin API
 * prepares an import in a thread of its own (src/control/import-pool.ts).
 */
export interface PreparedImport {
  readonly plan: readonly PlannedEnvironment[];
  readonly problems: readonly BundleProblem[];
  readonly keyChecks: readonly KeyCheck[];
  /** Scheduled changes and rollouts to record once the content is written. */
  readonly schedules: SchedulePlan;
}

export interface PlannedSchedule {
  /** JSON Pointer of the entry in the bundle. */
  readonly path: string;
  readonly envId: string;
  readonly dueMs: number;
  readonly ops: readonly ChangeOp[];
  readonly note: string;
}

export interface PlannedRollout {
  readonly path: string;
  readonly envId: string;
  readonly id: string;
  readonly rule: number;
  readonly variant: string | null;
  readonly start: number | null;
  readonly steps: readonly { readonly percent: number; readonly dueMs: number }[];
  readonly note: string;
}

export interface SchedulePlan {
  readonly schedules: readonly PlannedSchedule[];
  readonly rollouts: readonly PlannedRollout[];
}

/** Who an import's changes are scheduled by, and the bounds they are checked against. */
export interface ImportScheduler {
  readonly createdBy: string;
  readonly tokenId: string;
  readonly limits: ScheduleLimits;
}

/**
 * The rows of scheduled changes, rollouts and leases as both stores keep them (the same columns in
 * SQLite and PostgreSQL: src/store/sqlite/schema.ts, src/store/postgres/schema.ts).
 */

export const SCHEDULE_STATUSES = ['pending', 'paused', 'applied', 'failed', 'cancelled'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** Steps of one rollout: a few in practice; each is a scheduled change. */
export const MAX_ROLLOUT_STEPS = 100;

/** Not settled yet: the applier takes `pending` ones when due; `paused` ones wait for their rollout's resume. */
export const OPEN_STATUSES: readonly ScheduleStatus[] = ['pending', 'paused'];

export interface ScheduleRow {
  schedule_id: string;
  env_id: string;
  /** When it takes effect, Unix ms (the store's clock decides). */
  due_ms: number;
  /** The change set: a JSON array of ChangeOp (change-op.ts). */
  ops: string;
  note: string;
  status: ScheduleStatus;
  /** The rollout it is a step of, and which step (0-based), or null. */
  rollout_id: string | null;
  step: number | null;
  created_at: string;
  /** The audit actor of the call that created it: the change is applied in its name. */
  created_by: string;
  /** The id of the admin token that created it: revoking that token cancels it. */
  token_id: string;
  settled_at: string | null;
  /** Applied or failed: how long after its due time (ms, the store's clock). */
  late_ms: number | null;
  error_code: string | null;
  error_message: string | null;
  /** Applied: what each op did, JSON (OpResult[]); cancelled: the reason, JSON string. */
  result: string | null;
}

/**
 * Stored statuses. `killed`: the kill switch stopped it (its open steps cancelled) or switched its
 * target off after its last step applied; the API reads it as `cancelled` or `completed` with
 * `killed: true` (src/admin/server/schedule-view.ts).
 */
export const ROLLOUT_STATUSES = ['active', 'paused', 'rolled_back', 'cancelled', 'killed'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];

/**
 * A rollout's steps (in step order) have run their course: none is open and the last one applied
 * (steps skipped or cancelled before it do not undo that: its range holds every earlier one's).
 */
export function rolloutFinished(steps: readonly ScheduleRow[]): boolean {
  const last = steps[steps.length - 1];
  return last !== undefined && last.status === 'applied' && !steps.some((s) => OPEN_STATUSES.includes(s.status));
}

export interface RolloutRow {
  rollout_id: string;
  env_id: string;
  /** The content key and the id as created. */
  id_lower: string;
  content_id: string;
  /** The rule's index in the mapping, its segment (checked at each step) and the variant (null: the rule itself). */
  rule: number;
  segment: string;
  variant: string | null;
  /** The fixed low end of every step's mod range. */
  start: number;
  /** The target as it was before the rollout (RuleState JSON): what a rollback restores. */
  before: string;
  /** The steps, JSON: [{ percent, dueMs, scheduleId }]. */
  steps: string;
  status: RolloutStatus;
  note: string;
  created_at: string;
  created_by: string;
  token_id: string;
}

export interface ScheduleQuery {
  /** Only these environments (null: every one). */
  readonly envIds: readonly string[] | null;
  /** With envIds: also the changes of other environments whose syncs write into them. */
  readonly incoming: boolean;
  /** Only schedules touching this content key of `envIds[0]` (of their own environment without envIds; null: any). */
  readonly idLower: string | null;
  readonly statuses: readonly ScheduleStatus[] | null;
  /** Due at or after / before (Unix ms). */
  readonly fromMs: number | null;
  readonly toMs: number | null;
  readonly rolloutId: string | null;
  readonly limit: number;
}

export interface LeaseHolder {
  readonly holder: string;
  readonly untilMs: number;
  /** The store's clock when the lease was read. */
  readonly nowMs: number;
}

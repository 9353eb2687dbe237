/**
 * The shapes of the admin API's scheduled changes and rollouts (docs/schedule.md) that the console's
 * pure modules read (rollout-words.ts): without the DOM, so the unit tests type-check them in Node.
 */

export type ScheduleStatus = 'pending' | 'paused' | 'applied' | 'failed' | 'cancelled';

export interface RolloutStep {
  percent: number;
  at: string;
  mod: [number, number];
  scheduleId: string;
  status: ScheduleStatus;
  /** When it applies (a moved step's new time; `at` is its planned time). */
  dueAt: string;
  settledAt: string | null;
  error: { code: string; message: string } | null;
}

export interface Rollout {
  id: string;
  contentId: string;
  rule: number;
  segment: string;
  variant: string | null;
  start: number;
  status: 'active' | 'paused' | 'completed' | 'rolled_back' | 'cancelled';
  note: string;
  steps: RolloutStep[];
  /** The kill switch stopped it, or switched its rule off after its last step. */
  killed: boolean;
  /** The target as it was before the rollout: what a rollback restores. */
  before: { disabled: boolean; mod: [number, number] | null };
  /** The rule (or variant) in the item's mapping now; null when it is gone. */
  current: { disabled: boolean; mod: [number, number] | null; percent: number } | null;
}

/**
 * Staged rollouts: a plan of steps (`5% at T1, 25% at T2, 100% at T3`) for one rule of an item's
 * mapping (its `mod` gate) or one variant of an A/B test (its `mod` range), stored as one object
 * whose steps are scheduled changes (`rule.set` ops) applied like any other.
 *
 * Stickiness: every step's range starts at the same `start` and only grows (`[start, start + w - 1]`
 * with w = percent x 10 of the 1,000 mod values), so a player (a fixed `mod = XXH32(u) % 1000`) who
 * is in at one step is in at every later one: nobody flips back and forth while a rollout advances.
 * A rollback restores the target as it was before the rollout (recorded when it was created).
 */
import { randomBytes } from 'node:crypto';
import { RcdError } from '../../runtime/errors.js';
import { isoOf } from '../../shared/instant.js';
import { isPlainObject } from '../../shared/json.js';
import { contentIdKey } from '../ids.js';
import { requireContent } from '../ops/content.js';
import { editRules, ruleState, type RuleEditResult, type RuleState } from '../ops/rules.js';
import { call, type Step } from '../ops/rows.js';
import type { ChangeOp } from './change-op.js';
import { itemsOf } from './changes.js';
import { checkDue, createSchedule, rolloutSteps, type ScheduleMode } from './lifecycle.js';
import { rehearse } from './replay.js';
import type { ScheduleLimits } from './limits.js';
import { MAX_ROLLOUT_STEPS, OPEN_STATUSES, type RolloutRow, type ScheduleRow } from './rows.js';

const MOD_VALUES = 1000;

export interface RolloutStepPlan {
  /** Share of players (0 < percent <= 100, at most one decimal: the mod has 1,000 values). */
  readonly percent: number;
  readonly dueMs: number;
}

export interface NewRollout {
  readonly envId: string;
  readonly id: string;
  readonly rule: number;
  readonly variant: string | null;
  /** Low end of every step's range; default: the target's current low end, or 0. */
  readonly start: number | null;
  readonly steps: readonly RolloutStepPlan[];
  readonly note: string;
  readonly createdBy: string;
  readonly tokenId: string;
}

export interface StoredStep {
  readonly percent: number;
  readonly dueMs: number;
  readonly scheduleId: string;
  readonly mod: readonly [number, number];
}

/** Mod values a percent covers; refuses a percent finer than one mod value (0.1%). */
export function widthOf(percent: number): number {
  const width = Math.round(percent * 10);
  if (!(percent > 0 && percent <= 100) || Math.abs(percent * 10 - width) > 1e-9) {
    throw new RcdError('invalid_body', `percent ${percent} must be above 0 and at most 100, in steps of 0.1 (the mod has ${MOD_VALUES} values)`);
  }
  return width;
}

function newRolloutId(nowMs: number): string {
  return `ro_${nowMs.toString(16).padStart(12, '0')}${randomBytes(4).toString('hex')}`;
}

export function* createRollout(r: NewRollout, limits: ScheduleLimits, mode?: ScheduleMode): Step<{ rollout: RolloutRow; steps: ScheduleRow[]; current: RuleState }> {
  if (r.steps.length === 0 || r.steps.length > MAX_ROLLOUT_STEPS) throw new RcdError('invalid_body', `steps must list 1 to ${MAX_ROLLOUT_STEPS} steps`);
  const content = yield* requireContent(r.envId, r.id);
  const mapping = yield* call('getMapping', content.mapping_id);
  if (mapping === undefined) throw new RcdError('not_found', `content ${JSON.stringify(content.id)} has no mapping to roll out`);
  const rules = (JSON.parse(mapping.json) as { rules: Record<string, unknown>[] }).rules;
  const rule = rules[r.rule];
  if (rule === undefined) throw new RcdError('invalid_body', `rule ${r.rule}: the mapping of ${JSON.stringify(content.id)} has ${rules.length} rules`);
  const hasVariants = Array.isArray(rule.variants);
  if (r.variant === null && hasVariants) {
    throw new RcdError('invalid_body', `rule ${r.rule} is an A/B test: name the variant to roll out`);
  }
  if (r.variant !== null && !(hasVariants && (rule.variants as unknown[]).some((v) => isPlainObject(v) && v.name === r.variant))) {
    throw new RcdError('invalid_body', `rule ${r.rule} has no variant ${JSON.stringify(r.variant)}`);
  }
  const before = ruleState(rule, r.variant);
  const start = r.start ?? before.mod?.[0] ?? 0;
  if (!Number.isInteger(start) || start < 0 || start >= MOD_VALUES) throw new RcdError('invalid_body', `start must be an integer mod value, 0..${MOD_VALUES - 1}`);
  const mods = planRanges(r.steps, start);
  requireNoShrink(before, mods[0]!, r.variant);
  const now = yield* call('storeNowMs');
  const rolloutId = newRolloutId(now);
  const segment = String(rule.segment);
  const stored: StoredStep[] = [];
  const schedules: ScheduleRow[] = [];
  for (const [i, step] of r.steps.entries()) {
    const mod = mods[i]!;
    const op: ChangeOp = { op: 'rule.set', id: content.id, rule: r.rule, segment, variant: r.variant, mod, disabled: false };
    const row = yield* createSchedule(
      {
        envId: r.envId,
        dueMs: step.dueMs,
        ops: [op],
        note: `rollout ${rolloutId} step ${i + 1} of ${r.steps.length}: ${step.percent}%`,
        createdBy: r.createdBy,
        tokenId: r.tokenId,
        rollout: { id: rolloutId, step: i },
      },
      limits,
      mode,
    );
    schedules.push(row);
    stored.push({ percent: step.percent, dueMs: step.dueMs, scheduleId: row.schedule_id, mod });
  }
  const row: RolloutRow = {
    rollout_id: rolloutId,
    env_id: r.envId,
    id_lower: content.id_lower,
    content_id: content.id,
    rule: r.rule,
    segment,
    variant: r.variant,
    start,
    before: JSON.stringify(before),
    steps: JSON.stringify(stored),
    status: 'active',
    note: r.note,
    created_at: new Date(now).toISOString(),
    created_by: r.createdBy,
    token_id: r.tokenId,
  };
  yield* call('insertRollout', row);
  return { rollout: row, steps: schedules, current: before };
}

/** Each step's range from `start`: the steps must grow, stay within the mod's values and be in time order. */
function planRanges(steps: readonly RolloutStepPlan[], start: number): [number, number][] {
  let lastWidth = 0;
  let lastDue = -Infinity;
  return steps.map((step, i) => {
    const width = widthOf(step.percent);
    if (width <= lastWidth) throw new RcdError('invalid_body', `steps[${i}]: each step must cover more players than the one before (ranges only grow)`);
    if (start + width > MOD_VALUES) {
      throw new RcdError('invalid_body', `steps[${i}]: ${step.percent}% from start ${start} passes mod 999; ranges grow from start, so ${step.percent}% needs start <= ${MOD_VALUES - width}`);
    }
    if (step.dueMs <= lastDue) throw new RcdError('invalid_body', `steps[${i}]: steps must be in time order`);
    lastWidth = width;
    lastDue = step.dueMs;
    return [start, start + width - 1];
  });
}

/**
 * The first step must keep every player the target serves now (an enabled patch rule without a
 * range serves everyone): ranges only grow from there, and a first step narrower than the current
 * range would take players out, who come back at a later step.
 */
function requireNoShrink(before: RuleState, first: readonly [number, number], variant: string | null): void {
  if (before.disabled) return;
  const [lo, hi] = before.mod ?? [0, MOD_VALUES - 1];
  if (first[0] <= lo && first[1] >= hi) return;
  const target = variant === null ? 'the rule' : `variant ${JSON.stringify(variant)}`;
  throw new RcdError(
    'rollout_shrinks',
    `${target} serves mod ${lo}..${hi} now; the first step (mod ${first[0]}..${first[1]}) would take players out` +
      (before.mod === null ? ' (a rule without a range serves everyone: add it with "disabled": true to roll it out)' : ''),
    { current: [lo, hi], first },
  );
}

export function* requireRollout(envId: string, rolloutId: string): Step<RolloutRow> {
  const row = yield* call('getRollout', rolloutId);
  if (row === undefined || row.env_id !== envId) throw new RcdError('not_found', `no rollout ${JSON.stringify(rolloutId)} in environment ${JSON.stringify(envId)}`);
  return row;
}

function stepsOf(rollout: RolloutRow): Step<ScheduleRow[]> {
  return rolloutSteps(rollout.env_id, rollout.rollout_id);
}

function requireStatus(rollout: RolloutRow, allowed: readonly RolloutRow['status'][], action: string): void {
  if (!allowed.includes(rollout.status)) {
    throw new RcdError('conflict', `rollout ${rollout.rollout_id} is ${rollout.status.replace('_', ' ')}: it cannot be ${action}`, { status: rollout.status });
  }
}

/** What a resume does with held steps whose time passed while the rollout was paused. */
export type ResumeChoice =
  /** Apply them at once (a resume without a choice does this). */
  | { readonly overdue: 'apply' }
  /** Change nothing and answer rollout_step_overdue, naming them, so the caller can ask. */
  | { readonly overdue: 'refuse' }
  /** Cancel them; the rollout goes on with its next step at that step's time. */
  | { readonly overdue: 'skip' }
  /** Move the first held step to `atMs` and every later one by as much (their spacing kept). */
  | { readonly overdue: 'reschedule'; readonly atMs: number; readonly limits: ScheduleLimits };

const APPLY_OVERDUE: ResumeChoice = { overdue: 'apply' };

/** Pause: its pending steps wait (paused) until resumed; resume: they are pending again (one overdue applies at once). */
export function* pauseRollout(envId: string, rolloutId: string, pause: boolean): Step<RolloutRow> {
  if (!pause) return yield* resumeRollout(envId, rolloutId, APPLY_OVERDUE);
  const rollout = yield* requireRollout(envId, rolloutId);
  requireStatus(rollout, ['active'], 'paused');
  for (const step of yield* stepsOf(rollout)) yield* call('setScheduleStatus', step.schedule_id, 'pending', 'paused');
  yield* call('setRolloutStatus', rolloutId, 'paused');
  return { ...rollout, status: 'paused' };
}

/** Its held steps pending again, those whose time passed while it was paused dealt with as `choice` says. */
export function* resumeRollout(envId: string, rolloutId: string, choice: ResumeChoice): Step<RolloutRow> {
  const rollout = yield* requireRollout(envId, rolloutId);
  requireStatus(rollout, ['paused'], 'resumed');
  const now = yield* call('storeNowMs');
  const held = (yield* stepsOf(rollout)).filter((s) => s.status === 'paused');
  const overdue = held.filter((s) => s.due_ms <= now);
  if (overdue.length > 0 && choice.overdue === 'refuse') {
    const first = overdue[0]!;
    throw new RcdError(
      'rollout_step_overdue',
      `step ${(first.step ?? 0) + 1} of rollout ${rolloutId} was due at ${isoOf(first.due_ms)}, while it was paused: resume with "overdue" "apply", "skip" or "reschedule"`,
      { steps: overdue.map((s) => ({ step: s.step, scheduleId: s.schedule_id, at: isoOf(s.due_ms) })) },
    );
  }
  if (choice.overdue === 'skip' && overdue.length > 0 && overdue.length === held.length) {
    throw new RcdError('conflict', `every step left of rollout ${rolloutId} is past its time: nothing to skip to (apply it now or reschedule)`, { status: rollout.status });
  }
  for (const step of held) yield* call('setScheduleStatus', step.schedule_id, 'paused', 'pending');
  if (choice.overdue === 'skip') {
    const outcome = { status: 'cancelled' as const, settledAt: isoOf(now), lateMs: null, errorCode: null, errorMessage: null, result: JSON.stringify('skipped on resume: its time passed while the rollout was paused') };
    for (const step of overdue) yield* call('settleSchedule', step.schedule_id, OPEN_STATUSES, outcome);
  }
  if (choice.overdue === 'reschedule' && held.length > 0) yield* shiftSteps(envId, held, choice.atMs - held[0]!.due_ms, now, choice.limits);
  yield* call('setRolloutStatus', rolloutId, 'active');
  return { ...rollout, status: 'active' };
}

/** Moves steps by `deltaMs` (order kept), each checked and rehearsed at its new time as a move is. */
function* shiftSteps(envId: string, steps: readonly ScheduleRow[], deltaMs: number, now: number, limits: ScheduleLimits): Step<void> {
  for (const step of steps) {
    checkDue(step.due_ms + deltaMs, now, limits);
    yield* call('moveSchedule', step.schedule_id, step.due_ms + deltaMs);
  }
  for (const step of steps) {
    const ops = JSON.parse(step.ops) as ChangeOp[];
    yield* rehearse(envId, ops, itemsOf(envId, ops), step.due_ms + deltaMs, step.schedule_id);
  }
}

/** Makes the next pending step due now; the caller applies what is due (the same path as its time). */
export function* advanceRollout(envId: string, rolloutId: string): Step<ScheduleRow> {
  const rollout = yield* requireRollout(envId, rolloutId);
  requireStatus(rollout, ['active'], 'advanced');
  const next = (yield* stepsOf(rollout)).find((s) => s.status === 'pending');
  if (next === undefined) throw new RcdError('conflict', `rollout ${rolloutId} has no pending step left`);
  const now = yield* call('storeNowMs');
  yield* call('moveSchedule', next.schedule_id, now);
  return { ...next, due_ms: now };
}

export interface RolledBack {
  readonly rollout: RolloutRow;
  readonly mapping: RuleEditResult;
  readonly cancelled: readonly ScheduleRow[];
}

/** Cancels the open steps and restores the target as it was before the rollout, now. */
export function* rollBackRollout(envId: string, rolloutId: string): Step<RolledBack> {
  const rollout = yield* requireRollout(envId, rolloutId);
  requireStatus(rollout, ['active', 'paused'], 'rolled back');
  const now = new Date(yield* call('storeNowMs')).toISOString();
  const cancelled: ScheduleRow[] = [];
  for (const step of yield* stepsOf(rollout)) {
    if (!OPEN_STATUSES.includes(step.status)) continue;
    const outcome = { status: 'cancelled' as const, settledAt: now, lateMs: null, errorCode: null, errorMessage: null, result: JSON.stringify('rollout rolled back') };
    if ((yield* call('settleSchedule', step.schedule_id, OPEN_STATUSES, outcome)) > 0) cancelled.push({ ...step, status: 'cancelled', settled_at: now, result: outcome.result });
  }
  const before = JSON.parse(rollout.before) as RuleState;
  const mapping = yield* editRules(envId, rollout.content_id, {
    rule: rollout.rule,
    segment: rollout.segment,
    variant: rollout.variant,
    disabled: before.disabled,
    mod: before.mod,
  });
  yield* call('setRolloutStatus', rolloutId, 'rolled_back');
  return { rollout: { ...rollout, status: 'rolled_back' }, mapping, cancelled };
}

export interface RolloutView {
  readonly rollout: RolloutRow;
  readonly steps: readonly ScheduleRow[];
  /** The target in the item's mapping now; null when the item, its mapping, the rule (by index and segment) or the variant is gone. */
  readonly current: RuleState | null;
}

function* currentTarget(rollout: RolloutRow): Step<RuleState | null> {
  const content = yield* call('findContent', rollout.env_id, rollout.id_lower);
  const mapping = content === undefined ? undefined : yield* call('getMapping', content.mapping_id);
  if (mapping === undefined) return null;
  const rule = (JSON.parse(mapping.json) as { rules: Record<string, unknown>[] }).rules[rollout.rule];
  if (rule === undefined || rule.segment !== rollout.segment) return null;
  if (rollout.variant !== null && !(Array.isArray(rule.variants) && rule.variants.some((v) => isPlainObject(v) && v.name === rollout.variant))) return null;
  return ruleState(rule, rollout.variant);
}

function* viewOf(rollout: RolloutRow): Step<RolloutView> {
  return { rollout, steps: yield* stepsOf(rollout), current: yield* currentTarget(rollout) };
}

export function* readRollout(envId: string, rolloutId: string): Step<RolloutView> {
  return yield* viewOf(yield* requireRollout(envId, rolloutId));
}

export function* readRollouts(envId: string | null, id: string | null, limit: number): Step<RolloutView[]> {
  const key = id === null ? null : contentIdKey(id);
  const out: RolloutView[] = [];
  for (const rollout of yield* call('listRollouts', envId, limit)) {
    if (key !== null && rollout.id_lower !== key) continue;
    out.push(yield* viewOf(rollout));
  }
  return out;
}

/**
 * Scheduled changes and rollouts in bundles (docs/schedule.md, "Bundles"): export writes the ones
 * not applied yet, import brings them back in the import's transaction, each checked as when it is
 * scheduled (a rehearsal), recorded as scheduled by the importing call.
 *
 * ```
 * "schedules": [{"env","at","ops":[...],"note"?}]                 pending and paused changes
 * "rollouts":  [{"env","id","rule","variant"?,"start"?,"steps":[{"percent","at"}],"note"?}]   their steps not applied yet
 * ```
 *
 * Importing the same bundle again adds nothing: a change equal to one that is open (same
 * environment, time and ops) is skipped, and so is a rollout of a rule (or variant) that already has
 * one active or paused.
 */
import { z } from 'zod';
import { RcdError } from '../../runtime/errors.js';
import { isoOf, parseInstant } from '../../shared/instant.js';
import { contentIdKey, envIdProblem } from '../ids.js';
import { call, type Step } from '../ops/rows.js';
import { parseOps } from './changes.js';
import type { WriteBudget } from '../jsonc.js';
import { createSchedules, requireRoomFor } from './lifecycle.js';
import type { ImportScheduler, PlannedRollout, PlannedSchedule, SchedulePlan } from '../import-plan.js';
import { isRefusal } from './replay.js';
import { bundleError } from '../bundle/problems.js';
import { createRollout, type StoredStep } from './rollouts.js';
import { OPEN_STATUSES } from './rows.js';

export const ScheduleEntrySchema = z.strictObject({
  env: z.string(),
  at: z.string(),
  ops: z.array(z.unknown()),
  note: z.string().optional(),
});

export const RolloutEntrySchema = z.strictObject({
  env: z.string(),
  id: z.string(),
  rule: z.number().int().min(0),
  variant: z.string().nullable().optional(),
  start: z.number().int().min(0).max(999).nullable().optional(),
  steps: z.array(z.strictObject({ percent: z.number(), at: z.string() })).min(1),
  note: z.string().optional(),
});

export type ScheduleEntry = z.infer<typeof ScheduleEntrySchema>;
export type RolloutEntry = z.infer<typeof RolloutEntrySchema>;

/** An import without an admin call (`rcd import --store`, `--import` at start). */
export const STORE_IMPORT: ImportScheduler = { createdBy: 'import', tokenId: 'import', limits: { maxAheadMs: 3660 * 86_400_000, maxOpen: 10_000_000 } };

/** The checks that need no store, each problem with its pointer; entries with a problem plan nothing. */
export function planSchedules(raw: Record<string, unknown>, problems: { path: string; reason: string }[], budget: WriteBudget): SchedulePlan {
  const schedules: PlannedSchedule[] = [];
  const rollouts: PlannedRollout[] = [];
  const instant = (text: unknown, path: string): number | null => {
    const ms = typeof text === 'string' ? parseInstant(text) : null;
    if (ms === null) problems.push({ path, reason: 'must be an RFC 3339 time with an offset, e.g. 2026-10-31T00:00:00Z' });
    return ms;
  };
  const env = (id: unknown, path: string): boolean => {
    const problem = envIdProblem(id);
    if (problem !== '') problems.push({ path, reason: problem });
    return problem === '';
  };
  (Array.isArray(raw.schedules) ? raw.schedules : []).forEach((entry: unknown, i) => {
    const parsed = ScheduleEntrySchema.safeParse(entry);
    if (!parsed.success) return; // The bundle's shape check reports it.
    const path = `/schedules/${i}`;
    const e = parsed.data;
    const dueMs = instant(e.at, `${path}/at`);
    if (!env(e.env, `${path}/env`) || dueMs === null) return;
    try {
      schedules.push({ path, envId: e.env, dueMs, ops: parseOps(e.ops, e.env, budget), note: e.note ?? '' });
    } catch (err) {
      if (!(err instanceof RcdError)) throw err;
      problems.push({ path: `${path}/ops`, reason: err.message });
    }
  });
  (Array.isArray(raw.rollouts) ? raw.rollouts : []).forEach((entry: unknown, i) => {
    const parsed = RolloutEntrySchema.safeParse(entry);
    if (!parsed.success) return;
    const path = `/rollouts/${i}`;
    const e = parsed.data;
    if (!env(e.env, `${path}/env`)) return;
    const steps = e.steps.map((s, j) => ({ percent: s.percent, dueMs: instant(s.at, `${path}/steps/${j}/at`) }));
    if (steps.some((s) => s.dueMs === null)) return;
    rollouts.push({
      path,
      envId: e.env,
      id: e.id,
      rule: e.rule,
      variant: e.variant ?? null,
      start: e.start ?? null,
      steps: steps as { percent: number; dueMs: number }[],
      note: e.note ?? '',
    });
  });
  return { schedules, rollouts };
}

/**
 * Records the plan's changes and rollouts inside the import's transaction (after its content is
 * written, so a change may name an item the same bundle brings). A time already past is allowed:
 * the change applies at once, late. Every refusal is collected; any refusal refuses the bundle.
 */
export function* importSchedules(plan: SchedulePlan, by: ImportScheduler): Step<{ schedulesAdded: number; rolloutsAdded: number }> {
  const problems: { path: string; reason: string }[] = [];
  let schedulesAdded = 0;
  let rolloutsAdded = 0;
  const steps = plan.schedules.length + plan.rollouts.reduce((n, r) => n + r.steps.length, 0);
  if (steps === 0) return { schedulesAdded, rolloutsAdded };
  // The bound once for the whole bundle; a time already past is kept: the change applies at once, late.
  yield* requireRoomFor(steps, by.limits);
  const mode = { allowPast: true, openChecked: true };
  const fresh: PlannedSchedule[] = [];
  for (const s of plan.schedules) {
    const open = yield* call('listSchedules', { envIds: [s.envId], incoming: false, idLower: null, statuses: OPEN_STATUSES, fromMs: s.dueMs, toMs: s.dueMs + 1, rolloutId: null, limit: 1000 });
    const ops = JSON.stringify(s.ops);
    if (!open.some((o) => o.ops === ops && o.rollout_id === null)) fresh.push(s);
  }
  const made = yield* createSchedules(
    fresh.map((s) => ({ envId: s.envId, dueMs: s.dueMs, ops: s.ops, note: s.note, createdBy: by.createdBy, tokenId: by.tokenId })),
    by.limits,
    mode,
  );
  schedulesAdded = made.rows.length;
  for (const r of made.refused) problems.push({ path: fresh[r.index]!.path, reason: `${r.error.code}: ${r.error.message}` });
  for (const r of plan.rollouts) {
    const existing = yield* call('listRollouts', r.envId, 10_000);
    const key = contentIdKey(r.id);
    if (existing.some((x) => x.id_lower === key && x.rule === r.rule && x.variant === r.variant && (x.status === 'active' || x.status === 'paused'))) continue;
    try {
      yield* createRollout(
        { envId: r.envId, id: r.id, rule: r.rule, variant: r.variant, start: r.start, steps: r.steps, note: r.note, createdBy: by.createdBy, tokenId: by.tokenId },
        by.limits,
        mode,
      );
      rolloutsAdded++;
    } catch (err) {
      if (!isRefusal(err)) throw err;
      problems.push({ path: r.path, reason: `${err.code}: ${err.message}` });
    }
  }
  if (problems.length > 0) throw bundleError(problems);
  return { schedulesAdded, rolloutsAdded };
}

/** The open changes (not rollout steps) and the active or paused rollouts with their steps not applied yet, in the bundle's form. */
export function* exportSchedules(): Step<{ schedules: ScheduleEntry[]; rollouts: RolloutEntry[] }> {
  const open = yield* call('listSchedules', { envIds: null, incoming: false, idLower: null, statuses: OPEN_STATUSES, fromMs: null, toMs: null, rolloutId: null, limit: 10_000_000 });
  const schedules: ScheduleEntry[] = [];
  for (const s of open) {
    if (s.rollout_id !== null) continue;
    const entry: ScheduleEntry = { env: s.env_id, at: isoOf(s.due_ms), ops: JSON.parse(s.ops) as unknown[] };
    schedules.push(s.note === '' ? entry : { ...entry, note: s.note });
  }
  const rollouts: RolloutEntry[] = [];
  for (const r of yield* call('listRollouts', null, 10_000_000)) {
    if (r.status !== 'active' && r.status !== 'paused') continue;
    const openSteps = new Set(open.filter((s) => s.rollout_id === r.rollout_id).map((s) => s.schedule_id));
    const steps = (JSON.parse(r.steps) as StoredStep[]).filter((s) => openSteps.has(s.scheduleId)).map((s) => ({ percent: s.percent, at: isoOf(s.dueMs) }));
    if (steps.length === 0) continue;
    const entry: RolloutEntry = { env: r.env_id, id: r.content_id, rule: r.rule, variant: r.variant, start: r.start, steps };
    rollouts.push(r.note === '' ? entry : { ...entry, note: r.note });
  }
  return { schedules, rollouts };
}

/** A bundle with its changes and rollouts added, when there are any (a bundle without them stays as it was). */
export function withSchedules<B extends object>(bundle: B, s: { schedules: ScheduleEntry[]; rollouts: RolloutEntry[] }): B {
  return {
    ...bundle,
    ...(s.schedules.length === 0 ? {} : { schedules: s.schedules }),
    ...(s.rollouts.length === 0 ? {} : { rollouts: s.rollouts }),
  };
}

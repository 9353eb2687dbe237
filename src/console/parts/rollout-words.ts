/**
 * How a rollout card words a staged rollout (docs/schedule.md): its state in one word, the share
 * of players it serves now as a headline, its next step and when, its progress, and the steps
 * whose time passed while it was paused. Pure functions, without the DOM (unit-tested in Node).
 */
import type { Rollout, RolloutStep } from '../schedule-types.js';
import { relativeTime } from './experiment-format.js';

export type RolloutState = 'running' | 'paused' | 'finished' | 'killed' | 'rolled back' | 'cancelled';

/** The state in a word: killed wins over finished (the rule is off whatever the steps did). */
export function rolloutState(r: Rollout): RolloutState {
  if (r.killed) return 'killed';
  switch (r.status) {
    case 'active':
      return 'running';
    case 'paused':
      return 'paused';
    case 'completed':
      return 'finished';
    case 'rolled_back':
      return 'rolled back';
    case 'cancelled':
      return 'cancelled';
  }
}

/** The share of players the target serves now: the mapping's own state when known, else the last step applied. */
export function currentPercent(r: Rollout): number {
  if (r.current !== null) return r.current.percent;
  const applied = r.steps.filter((s) => s.status === 'applied');
  return applied.length === 0 ? 0 : applied[applied.length - 1]!.percent;
}

/** A share as the card says it: "25%", "12.5%". */
export function shareText(percent: number): string {
  return `${Number(percent.toFixed(1))}%`;
}

/** "Now at 25%", or "Rule off" when the target is switched off. */
export function headline(r: Rollout): string {
  if (r.current?.disabled === true) return `Now at 0%: ${targetName(r)} is off`;
  return `Now at ${shareText(currentPercent(r))}`;
}

/** "rule 2 (new-curve)" or "variant B of rule 1 (shop-test)". */
export function targetName(r: Rollout): string {
  const rule = `rule ${r.rule} (${r.segment})`;
  return r.variant === null ? rule : `variant ${r.variant} of ${rule}`;
}

/** The first step still open (pending or paused), with its 1-based number. */
export function nextStep(r: Rollout): { number: number; step: RolloutStep } | null {
  const i = r.steps.findIndex((s) => s.status === 'pending' || s.status === 'paused');
  return i < 0 ? null : { number: i + 1, step: r.steps[i]! };
}

/** Steps applied of all. */
export function progress(r: Rollout): { applied: number; total: number } {
  return { applied: r.steps.filter((s) => s.status === 'applied').length, total: r.steps.length };
}

/** Held steps whose time has passed at `nowMs`: a resume must say what to do with them. */
export function overdueSteps(r: Rollout, nowMs: number): { number: number; step: RolloutStep }[] {
  if (r.status !== 'paused') return [];
  const out: { number: number; step: RolloutStep }[] = [];
  r.steps.forEach((step, i) => {
    if (step.status === 'paused' && Date.parse(step.dueAt) <= nowMs) out.push({ number: i + 1, step });
  });
  return out;
}

/** One sentence of what the rollout does and will do, at `nowMs`. */
export function stateSentence(r: Rollout, nowMs: number): string {
  const next = nextStep(r);
  const nextText = next === null ? '' : `step ${next.number} (${shareText(next.step.percent)}) ${dueText(next.step, nowMs)}`;
  const rule = targetName(r);
  switch (rolloutState(r)) {
    case 'running':
      return next === null ? `Running: every step has applied; ${rule} serves ${shareText(currentPercent(r))} of players.` : `Running: next ${nextText}.`;
    case 'paused': {
      const late = overdueSteps(r, nowMs);
      const held = `Paused at ${shareText(currentPercent(r))}: nothing applies until it is resumed`;
      if (late.length > 0) return `${held}. Step ${late[0]!.number} (${shareText(late[0]!.step.percent)}) was due ${relativeTime(Date.parse(late[0]!.step.dueAt), nowMs)}, while paused.`;
      return next === null ? `${held}.` : `${held}; next ${nextText}.`;
    }
    case 'finished':
      return r.current === null
        ? 'Finished: every step has applied (the rule is no longer in the mapping).'
        : `Finished: ${rule} is at ${shareText(currentPercent(r))}${r.current.disabled ? ' but switched off' : ''}.`;
    case 'killed':
      return r.current === null || r.current.disabled
        ? `Killed: the kill switch turned ${rule} off; it serves nobody.`
        : `Killed: the kill switch stopped it; ${rule} serves ${shareText(currentPercent(r))} of players.`;
    case 'rolled back':
      return r.current === null ? 'Rolled back: the rule is as it was before the rollout.' : `Rolled back: ${rule} is as before the rollout (${r.current.disabled ? 'off' : shareText(currentPercent(r))}).`;
    case 'cancelled':
      return `Cancelled: no step is left to apply; ${rule} serves ${shareText(currentPercent(r))} of players.`;
  }
}

/** "in 3 min", "due now" or "was due 2 min ago". */
export function dueText(step: RolloutStep, nowMs: number): string {
  const due = Date.parse(step.dueAt);
  const rel = relativeTime(due, nowMs);
  if (rel === 'just now') return 'due now';
  return due > nowMs ? rel : `was due ${rel}`;
}

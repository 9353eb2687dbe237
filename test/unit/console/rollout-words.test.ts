/**
 * How a rollout card words a rollout (src/console/parts/rollout-words.ts): the state in a word, the
 * "now at" headline from the rule's state in the mapping, the next step and when, the progress, and
 * the steps that fell due while it was paused.
 */
import { describe, expect, it } from 'vitest';
import type { Rollout, RolloutStep } from '../../../src/console/schedule-types.js';
import { dueText, headline, nextStep, overdueSteps, progress, rolloutState, stateSentence } from '../../../src/console/parts/rollout-words.js';

const NOW = Date.parse('2027-03-01T12:00:00Z');
const MIN = 60_000;

function step(percent: number, dueMs: number, status: RolloutStep['status']): RolloutStep {
  const at = new Date(dueMs).toISOString();
  return { percent, at, dueAt: at, mod: [0, percent * 10 - 1], scheduleId: `sch_${percent}`, status, settledAt: null, error: null };
}

function rollout(over: Partial<Rollout>): Rollout {
  return {
    id: 'ro_1',
    contentId: 'Game',
    rule: 0,
    segment: 'new-curve',
    variant: null,
    start: 0,
    status: 'active',
    note: '',
    killed: false,
    before: { disabled: true, mod: null },
    current: { disabled: false, mod: [0, 249], percent: 25 },
    steps: [step(5, NOW - 10 * MIN, 'applied'), step(25, NOW - 5 * MIN, 'applied'), step(100, NOW + 3 * MIN, 'pending')],
    ...over,
  };
}

describe('a running rollout', () => {
  it('says its share now, the next step and when, and its progress', () => {
    const r = rollout({});
    expect(rolloutState(r)).toBe('running');
    expect(headline(r)).toBe('Now at 25%');
    expect(nextStep(r)).toMatchObject({ number: 3, step: { percent: 100 } });
    expect(dueText(nextStep(r)!.step, NOW)).toBe('in 3 min');
    expect(progress(r)).toEqual({ applied: 2, total: 3 });
    expect(stateSentence(r, NOW)).toBe('Running: next step 3 (100%) in 3 min.');
  });
});

describe('a paused rollout', () => {
  it('names a held step whose time passed while paused', () => {
    const r = rollout({
      status: 'paused',
      steps: [step(5, NOW - 10 * MIN, 'applied'), step(25, NOW - 2 * MIN, 'paused'), step(100, NOW + 3 * MIN, 'paused')],
      current: { disabled: false, mod: [0, 49], percent: 5 },
    });
    expect(rolloutState(r)).toBe('paused');
    expect(overdueSteps(r, NOW).map((o) => o.number)).toEqual([2]);
    expect(stateSentence(r, NOW)).toBe('Paused at 5%: nothing applies until it is resumed. Step 2 (25%) was due 2 min ago, while paused.');
    expect(overdueSteps(rollout({ status: 'active' }), NOW + 10 * MIN)).toEqual([]);
  });
  it('without an overdue step, says what comes next', () => {
    const r = rollout({ status: 'paused', steps: [step(5, NOW - 10 * MIN, 'applied'), step(100, NOW + 3 * MIN, 'paused')], current: { disabled: false, mod: [0, 49], percent: 5 } });
    expect(stateSentence(r, NOW)).toBe('Paused at 5%: nothing applies until it is resumed; next step 2 (100%) in 3 min.');
  });
});

describe('a finished, killed, rolled back or cancelled rollout', () => {
  const applied = [step(5, NOW - 10 * MIN, 'applied'), step(100, NOW - 5 * MIN, 'applied')];
  it('finished: the rule at 100%', () => {
    const r = rollout({ status: 'completed', steps: applied, current: { disabled: false, mod: [0, 999], percent: 100 } });
    expect(rolloutState(r)).toBe('finished');
    expect(headline(r)).toBe('Now at 100%');
    expect(stateSentence(r, NOW)).toBe('Finished: rule 0 (new-curve) is at 100%.');
    expect(nextStep(r)).toBeNull();
  });
  it('killed after it finished: killed, the rule off', () => {
    const r = rollout({ status: 'completed', killed: true, steps: applied, current: { disabled: true, mod: [0, 999], percent: 0 } });
    expect(rolloutState(r)).toBe('killed');
    expect(headline(r)).toBe('Now at 0%: rule 0 (new-curve) is off');
    expect(stateSentence(r, NOW)).toBe('Killed: the kill switch turned rule 0 (new-curve) off; it serves nobody.');
  });
  it('rolled back and cancelled', () => {
    const back = rollout({ status: 'rolled_back', current: { disabled: true, mod: null, percent: 0 } });
    expect(rolloutState(back)).toBe('rolled back');
    expect(stateSentence(back, NOW)).toBe('Rolled back: rule 0 (new-curve) is as before the rollout (off).');
    const gone = rollout({ status: 'cancelled', current: null, variant: 'B' });
    expect(rolloutState(gone)).toBe('cancelled');
    // Without the rule in the mapping, the share is the last step applied.
    expect(headline(gone)).toBe('Now at 25%');
    expect(stateSentence(gone, NOW)).toBe('Cancelled: no step is left to apply; variant B of rule 0 (new-curve) serves 25% of players.');
  });
});

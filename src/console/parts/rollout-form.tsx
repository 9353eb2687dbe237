/**
 * Creates a staged rollout of an item (docs/schedule.md) without touching its mapping's JSON: pick a
 * rule of the mapping, a variant of an A/B test, or a new rule (its segment and patch), then the
 * steps as shares and times, the first being the starting share. A new rule is added to the mapping
 * switched off (`"disabled": true`, serving nobody) and the rollout switches it on step by step; if
 * the server refuses the rollout, the mapping is put back as it was.
 */
import { useState } from 'preact/hooks';
import { api, seg, type ContentDetail, type Rollout } from '../api.js';
import { instantOf, TimeInput, zoneName, type Zone } from '../schedule-ui.js';
import { OutcomeLines, useOutcome } from './outcome.js';
import { shareText } from './rollout-words.js';
import { timeProblem } from './wall-time-check.js';

interface StepRow {
  percent: string;
  at: string;
}

const NEW_RULE = 'new';

/** Every target a rollout can have in this mapping: "rule:N" or "variant:N:NAME", with its words. */
function targetsOf(item: ContentDetail): { value: string; label: string }[] {
  const out: { value: string; label: string }[] = [];
  (item.mapping?.rules ?? []).forEach((rule, i) => {
    if (Array.isArray(rule.variants)) {
      for (const v of rule.variants) out.push({ value: `variant:${i}:${v.name}`, label: `variant ${v.name} of rule ${i} (${rule.segment})` });
    } else {
      out.push({ value: `rule:${i}`, label: `rule ${i} (${rule.segment})` });
    }
  });
  return out;
}

export function RolloutForm({ env, item, onCreated }: { env: string; item: ContentDetail; onCreated: () => void }): preact.JSX.Element {
  const targets = targetsOf(item);
  const [target, setTarget] = useState(targets[0]?.value ?? NEW_RULE);
  const [segment, setSegment] = useState('');
  const [patch, setPatch] = useState('{\n}');
  const [steps, setSteps] = useState<StepRow[]>([
    { percent: '5', at: '' },
    { percent: '25', at: '' },
    { percent: '100', at: '' },
  ]);
  const [zone, setZone] = useState<Zone>('local');
  const [note, setNote] = useState('');
  const outcome = useOutcome();
  const path = `environments/${seg(env)}/content/${seg(item.id)}`;

  function setStep(i: number, change: Partial<StepRow>): void {
    setSteps(steps.map((s, j) => (j === i ? { ...s, ...change } : s)));
  }

  /** The steps as the API takes them; refuses a share or time the form can already tell is wrong. */
  function planned(): { percent: number; at: string }[] {
    return steps.map((s, i) => {
      const percent = Number(s.percent);
      if (s.percent.trim() === '' || !(percent > 0 && percent <= 100)) throw new Error(`${i === 0 ? 'Starting share' : `Share of step ${i + 1}`}: a percentage above 0 and at most 100`);
      const at = instantOf(s.at, zone);
      if (at === null) throw new Error(`${i === 0 ? 'Starting at' : `Step ${i + 1} at`}: ${timeProblem(s.at, zoneName(zone)) ?? 'choose a time'}`);
      return { percent, at };
    });
  }

  async function submit(e: Event): Promise<void> {
    e.preventDefault();
    await outcome.attempt(async () => {
      const plan = planned();
      let rule: number;
      let variant: string | null = null;
      let restore: (() => Promise<void>) | null = null;
      if (target === NEW_RULE) {
        if (segment.trim() === '') throw new Error('Segment of the new rule: give it a name');
        let patchJson: unknown;
        try {
          patchJson = JSON.parse(patch);
        } catch {
          throw new Error('Patch of the new rule: not JSON (e.g. {"difficulty": "adaptive"})');
        }
        const fresh = await api<ContentDetail>('GET', path);
        const rules: unknown[] = [...((fresh.mapping?.rules ?? []) as unknown[])];
        rule = rules.length;
        rules.push({ segment: segment.trim(), disabled: true, patch: patchJson });
        await api('PUT', `${path}/mapping`, { ...(fresh.mapping ?? {}), rules });
        const before = fresh.mapping;
        restore = async () => {
          if (before === null) await api('DELETE', `${path}/mapping`);
          else await api('PUT', `${path}/mapping`, before);
        };
      } else {
        const parts = target.split(':');
        rule = Number(parts[1]);
        if (parts[0] === 'variant') variant = parts.slice(2).join(':');
      }
      const body = { id: item.id, rule, ...(variant === null ? {} : { variant }), steps: plan, ...(note.trim() === '' ? {} : { note: note.trim() }) };
      let made: Rollout;
      try {
        made = await api<Rollout>('POST', `environments/${seg(env)}/rollouts`, body);
      } catch (err) {
        if (restore !== null) await restore();
        throw err;
      }
      onCreated();
      const added = target === NEW_RULE ? `Rule ${rule} (${segment.trim()}) added switched off; ` : '';
      return `${added}rollout ${made.id} created: ${plan.map((p) => shareText(p.percent)).join(' → ')}.`;
    });
  }

  return (
    <form onSubmit={(e) => void submit(e)} aria-labelledby={`rollout-form-${item.id}`}>
      <h3 id={`rollout-form-${item.id}`}>Create a rollout of {item.id}</h3>
      <div class="row">
        <label>
          Roll out{' '}
          <select value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
            {targets.map((t) => (
              <option key={t.value} value={t.value}>
                {t.label}
              </option>
            ))}
            <option value={NEW_RULE}>a new rule (added switched off)</option>
          </select>
        </label>
        {target === NEW_RULE && (
          <label>
            Segment of the new rule <input value={segment} onInput={(e) => setSegment(e.currentTarget.value)} placeholder="e.g. new-curve" />
          </label>
        )}
      </div>
      {target === NEW_RULE && (
        <label class="block">
          Patch of the new rule (JSON: what it changes for the players it serves)
          <textarea rows={3} value={patch} onInput={(e) => setPatch(e.currentTarget.value)} />
        </label>
      )}
      <fieldset>
        <legend>Steps: each share of players from its time on (the range only grows)</legend>
        {steps.map((s, i) => (
          <div class="row" key={i}>
            <label>
              {i === 0 ? 'Starting share (%)' : `Share of step ${i + 1} (%)`}{' '}
              <input type="number" min={0.1} max={100} step={0.1} value={s.percent} onInput={(e) => setStep(i, { percent: e.currentTarget.value })} required />
            </label>
            <TimeInput label={i === 0 ? 'Starting at' : `Step ${i + 1} at`} value={s.at} zone={zone} onValue={(v) => setStep(i, { at: v })} onZone={setZone} />
            {steps.length > 1 && (
              <button type="button" onClick={() => setSteps(steps.filter((_, j) => j !== i))} aria-label={`Remove step ${i + 1}`}>
                Remove
              </button>
            )}
          </div>
        ))}
        <button type="button" onClick={() => setSteps([...steps, { percent: '100', at: '' }])}>
          Add a step
        </button>
      </fieldset>
      <div class="row">
        <label>
          Description of the rollout <input value={note} onInput={(e) => setNote(e.currentTarget.value)} maxLength={1000} placeholder="e.g. new difficulty curve" />
        </label>
        <button type="submit">Create rollout</button>
      </div>
      <OutcomeLines outcome={outcome} />
    </form>
  );
}

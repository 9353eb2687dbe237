/**
 * A staged rollout as a card (docs/schedule.md): the share it serves now as its headline, its state
 * in words, the next step and when, its progress and steps, and the actions its state allows:
 * pause, resume, advance to the next step now, roll back. A resume whose held step's time passed
 * while it was paused does not apply that step silently: the card says so and asks whether to apply
 * it now, skip to the next step or reschedule the steps left (the server refuses a plain resume
 * then, with `rollout_step_overdue`, so a step falling due while the page is open is asked about too).
 * Every action is a live write: it is confirmed first, naming what changes, with an optional comment
 * for the audit log (the overdue choice carries its comment field itself).
 */
import { useState } from 'preact/hooks';
import { apiWrite, ApiError, seg, type Rollout } from '../api.js';
import { bothZones, instantOf, TimeInput, zoneName, type Zone } from '../schedule-ui.js';
import { ConfirmButton, MAX_COMMENT, useConfirmWrite } from './confirm-write.js';
import { relativeTime } from './experiment-format.js';
import { OutcomeLines, useOutcome } from './outcome.js';
import { dueText, headline, nextStep, overdueSteps, progress, rolloutState, shareText, stateSentence, targetName } from './rollout-words.js';
import { Table } from './table.js';
import { timeProblem } from './wall-time-check.js';

type Action = 'pause' | 'resume' | 'advance' | 'rollback';

export function RolloutCard({ env, rollout: r, nowMs, onChange }: { env: string; rollout: Rollout; nowMs: number; onChange: () => void }): preact.JSX.Element {
  const outcome = useOutcome();
  const confirm = useConfirmWrite();
  const [asking, setAsking] = useState<'overdue' | null>(null);
  const [overdueComment, setOverdueComment] = useState('');
  const [later, setLater] = useState('');
  const [zone, setZone] = useState<Zone>('local');
  const state = rolloutState(r);
  const done = progress(r);
  const next = nextStep(r);
  const late = overdueSteps(r, nowMs);

  async function act(action: Action, body: object | undefined, comment: string): Promise<void> {
    await outcome.attempt(async () => {
      try {
        const after = await apiWrite<Rollout>('POST', `environments/${seg(env)}/rollouts/${seg(r.id)}/${action}`, comment, body);
        setAsking(null);
        onChange();
        return `Rollout of ${r.contentId}, ${targetName(r)}: ${rolloutState(after)}; ${headline(after).toLowerCase()}.`;
      } catch (err) {
        // A step fell due while the page showed none: ask, as for one shown late.
        if (err instanceof ApiError && err.code === 'rollout_step_overdue') {
          setOverdueComment(comment);
          setAsking('overdue');
          onChange();
          return 'A step\'s time passed while the rollout was paused: choose what to do with it below.';
        }
        throw err;
      }
    });
  }

  async function reschedule(): Promise<void> {
    const at = instantOf(later, zone);
    if (at === null) {
      outcome.setError(new Error(timeProblem(later, zoneName(zone)) ?? 'choose the new time of the next step'));
      return;
    }
    await act('resume', { overdue: 'reschedule', at }, overdueComment);
  }

  const firstLate = late[0];
  const canSkip = late.length > 0 && r.steps.some((s) => s.status === 'paused' && !late.some((l) => l.step === s));
  return (
    <section aria-label={`Rollout ${r.id}`} class={`rollout rollout-${state.replace(' ', '-')}`}>
      <h4>
        {r.contentId}, {targetName(r)}: <span class="badge">{state}</span>
      </h4>
      <p class="rollout-headline">{headline(r)}</p>
      <p>{stateSentence(r, nowMs)}</p>
      <p class="muted">
        <progress max={done.total} value={done.applied} aria-label={`Steps applied of rollout ${r.id}`} /> {done.applied} of {done.total} steps applied
        {next !== null && state !== 'killed' && (
          <>
            ; next: {shareText(next.step.percent)} {dueText(next.step, nowMs)}
          </>
        )}
        {r.note !== '' && <> — {r.note}</>}
      </p>
      <Table caption={`Steps of rollout ${r.id}: the range grows from mod ${r.start}`} columns={['Share', 'At', 'When', 'Mods', 'Status']}>
        {r.steps.map((s) => (
          <tr key={s.scheduleId}>
            <th scope="row">{shareText(s.percent)}</th>
            <td>{bothZones(s.dueAt)}</td>
            <td>{s.status === 'pending' || s.status === 'paused' ? dueText(s, nowMs) : ''}</td>
            <td>
              {s.mod[0]}-{s.mod[1]}
            </td>
            <td>{s.error === null ? s.status : `${s.status}: ${s.error.message}`}</td>
          </tr>
        ))}
      </Table>
      <div class="row">
        {r.status === 'active' && (
          <ConfirmButton
            confirm={confirm}
            question={{
              question: `Pause the rollout of ${r.contentId}, ${targetName(r)}? Its next step waits until it is resumed; the players it serves now keep their share.`,
              yes: 'Yes, pause it',
              run: (c) => act('pause', undefined, c),
            }}
          >
            Pause rollout
          </ConfirmButton>
        )}
        {r.status === 'active' && next !== null && (
          <ConfirmButton
            confirm={confirm}
            question={{
              question: `Apply step ${next.number} of ${r.contentId} now: ${targetName(r)} to ${shareText(next.step.percent)} of players, for every player at once?`,
              yes: `Yes, go to ${shareText(next.step.percent)} now`,
              run: (c) => act('advance', undefined, c),
            }}
          >
            Advance to the next step now
          </ConfirmButton>
        )}
        {r.status === 'paused' && (
          <button
            type="button"
            onClick={() => {
              if (late.length > 0) {
                setOverdueComment('');
                setAsking('overdue');
              } else {
                confirm.ask({
                  question: `Resume the rollout of ${r.contentId}, ${targetName(r)}?${next === null ? '' : ` Its next step (${shareText(next.step.percent)}) applies at its time.`}`,
                  yes: 'Yes, resume it',
                  run: (c) => act('resume', { overdue: 'refuse' }, c),
                });
              }
            }}
          >
            Resume rollout
          </button>
        )}
        {(r.status === 'active' || r.status === 'paused' || (r.status === 'completed' && !r.killed)) && (
          <ConfirmButton
            confirm={confirm}
            question={{
              question: `Roll back the rollout of ${r.contentId}: cancel its steps left and put ${targetName(r)} back as it was before (${r.before.disabled ? 'off' : r.before.mod === null ? 'every player' : `mods ${r.before.mod[0]}-${r.before.mod[1]}`}), now?`,
              yes: 'Yes, roll it back',
              run: (c) => act('rollback', undefined, c),
            }}
          >
            Roll back rollout
          </ConfirmButton>
        )}
      </div>
      {confirm.dialog}
      {asking === 'overdue' && (
        <div role="alertdialog" aria-labelledby={`overdue-${r.id}`} class="confirm warning">
          <p id={`overdue-${r.id}`}>
            {firstLate === undefined
              ? 'A step\'s time passed while the rollout was paused.'
              : `Step ${firstLate.number} (${shareText(firstLate.step.percent)}) was due ${relativeTime(Date.parse(firstLate.step.dueAt), nowMs)}, while the rollout was paused.`}{' '}
            Resuming as planned would apply it at once. What should happen to it?
          </p>
          <label>
            Comment for the audit log (optional){' '}
            <input value={overdueComment} maxLength={MAX_COMMENT} onInput={(e) => setOverdueComment(e.currentTarget.value)} placeholder="why, e.g. the event starts late" />
          </label>
          <div class="row">
            <button type="button" onClick={() => void act('resume', { overdue: 'apply' }, overdueComment)}>
              Apply it now{firstLate === undefined ? '' : ` (${shareText(firstLate.step.percent)})`}
            </button>
            {canSkip && (
              <button type="button" onClick={() => void act('resume', { overdue: 'skip' }, overdueComment)}>
                Skip it: go on with the next step at its time
              </button>
            )}
          </div>
          <div class="row">
            <TimeInput label="Next step at" value={later} zone={zone} onValue={setLater} onZone={setZone} />
            <button type="button" onClick={() => void reschedule()}>
              Reschedule the steps left
            </button>
            <button type="button" onClick={() => setAsking(null)}>
              Stay paused
            </button>
          </div>
        </div>
      )}
      <OutcomeLines outcome={outcome} />
    </section>
  );
}

/**
 * An environment's schedule (docs/schedule.md): its timeline of scheduled changes (reschedule,
 * cancel), a form to schedule one, and its staged rollouts with pause, resume, advance and rollback.
 */
import { useState } from 'preact/hooks';
import { api, seg, type Rollout } from '../api.js';
import { ScheduleForm, Timeline, bothZones } from '../schedule-ui.js';
import { OutcomeLines, useOutcome } from '../parts/outcome.js';
import { Table } from '../parts/table.js';
import { useLoad } from '../parts/use-load.js';
import { useFollow } from '../parts/use-follow.js';
import { EnvNav } from './env-nav.js';

export function ScheduleScreen({ env }: { env: string }): preact.JSX.Element {
  const [refresh, setRefresh] = useState(0);
  return (
    <section aria-labelledby="schedule-title">
      <h2 id="schedule-title">Schedule of {env}</h2>
      <EnvNav env={env} current="schedule" />
      <ScheduleForm env={env} onScheduled={() => setRefresh((n) => n + 1)} />
      <Timeline env={env} refresh={refresh} />
      <Rollouts env={env} refresh={refresh} onChange={() => setRefresh((n) => n + 1)} />
    </section>
  );
}

function Rollouts({ env, refresh, onChange }: { env: string; refresh: number; onChange: () => void }): preact.JSX.Element {
  const list = useLoad(() => api<{ rollouts: Rollout[] }>('GET', `environments/${seg(env)}/rollouts`), [env, refresh]);
  useFollow(list.reload, env);
  const outcome = useOutcome();

  async function act(r: Rollout, action: 'pause' | 'resume' | 'advance' | 'rollback'): Promise<void> {
    await outcome.attempt(async () => {
      const after = await api<Rollout>('POST', `environments/${seg(env)}/rollouts/${seg(r.id)}/${action}`);
      onChange();
      return `Rollout ${r.id} of ${r.contentId}: ${after.status.replace('_', ' ')}.`;
    });
  }

  const rollouts = list.data?.rollouts ?? [];
  return (
    <section aria-labelledby="rollouts-title">
      <h3 id="rollouts-title">Staged rollouts</h3>
      <OutcomeLines outcome={outcome} loadError={list.error} />
      {rollouts.length === 0 && <p class="muted">No rollouts (create one with the API or `rcd rollout create`).</p>}
      {rollouts.map((r) => (
        <section key={r.id} aria-label={`Rollout ${r.id}`} class="rollout">
          <h4>
            {r.contentId}, rule {r.rule} ({r.segment}
            {r.variant === null ? '' : `, variant ${r.variant}`}): <span class="badge">{r.status.replace('_', ' ')}</span>
          </h4>
          <Table caption={`Steps: the range grows from mod ${r.start}`} columns={['Share', 'At', 'Mods', 'Status']}>
            {r.steps.map((s) => (
              <tr key={s.scheduleId}>
                <th scope="row">{s.percent}%</th>
                <td>{bothZones(s.at)}</td>
                <td>
                  {s.mod[0]}-{s.mod[1]}
                </td>
                <td>{s.error === null ? s.status : `${s.status}: ${s.error.message}`}</td>
              </tr>
            ))}
          </Table>
          <div class="row">
            {r.status === 'active' && (
              <>
                <button type="button" onClick={() => void act(r, 'pause')}>
                  Pause rollout
                </button>
                <button type="button" onClick={() => void act(r, 'advance')}>
                  Advance to the next step now
                </button>
              </>
            )}
            {r.status === 'paused' && (
              <button type="button" onClick={() => void act(r, 'resume')}>
                Resume rollout
              </button>
            )}
            {(r.status === 'active' || r.status === 'paused') && (
              <button type="button" onClick={() => void act(r, 'rollback')}>
                Roll back rollout
              </button>
            )}
          </div>
        </section>
      ))}
    </section>
  );
}

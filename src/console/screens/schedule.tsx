/**
 * An environment's schedule (docs/schedule.md): its timeline of scheduled changes (reschedule,
 * cancel), a form to schedule one, and its staged rollouts with pause, resume, advance and rollback.
 */
import { useState } from 'preact/hooks';
import { api, seg, type Rollout } from '../api.js';
import { ScheduleForm, Timeline, bothZones } from '../schedule-ui.js';
import { ErrorBox, Status, useLoad } from '../ui.js';
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
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);

  async function act(r: Rollout, action: 'pause' | 'resume' | 'advance' | 'rollback'): Promise<void> {
    try {
      const after = await api<Rollout>('POST', `environments/${seg(env)}/rollouts/${seg(r.id)}/${action}`);
      setStatus(`Rollout ${r.id} of ${r.contentId}: ${after.status.replace('_', ' ')}.`);
      setError(null);
      onChange();
    } catch (err) {
      setError(err);
    }
  }

  const rollouts = list.data?.rollouts ?? [];
  return (
    <section aria-labelledby="rollouts-title">
      <h3 id="rollouts-title">Staged rollouts</h3>
      {status !== '' && <Status>{status}</Status>}
      <ErrorBox error={error ?? list.error} />
      {rollouts.length === 0 && <p class="muted">No rollouts (create one with the API or `rcd rollout create`).</p>}
      {rollouts.map((r) => (
        <section key={r.id} aria-label={`Rollout ${r.id}`} class="rollout">
          <h4>
            {r.contentId}, rule {r.rule} ({r.segment}
            {r.variant === null ? '' : `, variant ${r.variant}`}): <span class="badge">{r.status.replace('_', ' ')}</span>
          </h4>
          <table>
            <caption>Steps: the range grows from mod {r.start}</caption>
            <thead>
              <tr>
                <th scope="col">Share</th>
                <th scope="col">At</th>
                <th scope="col">Mods</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
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
            </tbody>
          </table>
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

/**
 * An environment's schedule (docs/schedule.md): its timeline of scheduled changes (reschedule,
 * cancel), a form to schedule one, and its staged rollouts as cards (parts/rollout-card.tsx).
 */
import { useState } from 'preact/hooks';
import { ScheduleForm, Timeline } from '../schedule-ui.js';
import { RolloutList } from '../parts/rollout-list.js';
import { EnvNav } from './env-nav.js';

export function ScheduleScreen({ env }: { env: string }): preact.JSX.Element {
  const [refresh, setRefresh] = useState(0);
  return (
    <section aria-labelledby="schedule-title">
      <h2 id="schedule-title">Schedule of {env}</h2>
      <EnvNav env={env} current="schedule" />
      <ScheduleForm env={env} onScheduled={() => setRefresh((n) => n + 1)} />
      <Timeline env={env} refresh={refresh} />
      <RolloutList env={env} refresh={refresh} onChange={() => setRefresh((n) => n + 1)} />
    </section>
  );
}

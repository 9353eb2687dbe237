/**
 * The staged rollouts of an environment (or of one item) as cards, newest first, re-read when the
 * admin event stream names the environment (and item), or every few seconds while the stream is down
 * (use-follow.ts), so a step that applies, or a kill, shows without a reload.
 */
import { api, seg, type Rollout } from '../api.js';
import { ErrorBox } from './messages.js';
import { RolloutCard } from './rollout-card.js';
import { useFollow } from './use-follow.js';
import { useLoad } from './use-load.js';
import { useNow } from './use-now.js';

export function RolloutList({ env, id, refresh, onChange }: { env: string; id?: string; refresh: number; onChange: () => void }): preact.JSX.Element {
  const query = id === undefined ? '' : `?id=${encodeURIComponent(id)}`;
  const list = useLoad(() => api<{ rollouts: Rollout[] }>('GET', `environments/${seg(env)}/rollouts${query}`), [env, query, refresh]);
  useFollow(list.reload, env, id);
  const nowMs = useNow(1_000);
  const rollouts = list.data?.rollouts ?? [];
  return (
    <section aria-labelledby={`rollouts-${id ?? 'env'}`}>
      <h3 id={`rollouts-${id ?? 'env'}`}>{id === undefined ? 'Staged rollouts' : `Rollouts of ${id}`}</h3>
      <ErrorBox error={list.error} />
      {list.data !== null && rollouts.length === 0 && <p class="muted">No rollouts{id === undefined ? ' (create one from an item\'s page)' : ''}.</p>}
      {rollouts.map((r) => (
        <RolloutCard
          key={r.id}
          env={env}
          rollout={r}
          nowMs={nowMs}
          onChange={() => {
            list.reload();
            onChange();
          }}
        />
      ))}
    </section>
  );
}

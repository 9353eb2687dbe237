/**
 * An environment's experiments (docs/experiments.md): for each, its variants' configured and
 * observed shares, its players, first and last exposure, and a sample ratio mismatch as an alert.
 * Re-read every few seconds while open, in place.
 */
import { api, seg } from '../api.js';
import type { Experiment, ExperimentList } from '../experiment-types.js';
import { ExperimentFacts, VariantTable } from '../parts/experiment-summary.js';
import { LIVE_REFRESH_MS, LiveStatus } from '../parts/live-status.js';
import { SrmBanner } from '../parts/srm-banner.js';
import { useLiveLoad } from '../parts/use-live-load.js';
import { useNow } from '../parts/use-now.js';
import { EnvNav } from './env-nav.js';

/** The address of an experiment's own page. */
function experimentHref(env: string, name: string): string {
  return `#/env/${seg(env)}/experiments/${seg(name)}`;
}

export function Experiments({ env }: { env: string }): preact.JSX.Element {
  const list = useLiveLoad(() => api<ExperimentList>('GET', `environments/${seg(env)}/experiments`), [env], LIVE_REFRESH_MS);
  const now = useNow(1000);
  const experiments = list.data?.experiments ?? [];
  return (
    <section aria-labelledby="experiments-title">
      <h2 id="experiments-title">Experiments of {env}</h2>
      <EnvNav env={env} current="experiments" />
      <LiveStatus loaded={list} now={now} />
      {list.data?.recording === false && <NotRecording />}
      {list.data !== null && experiments.length === 0 && (
        <p class="muted">No experiments in {env}: a mapping rule with variants is one (docs/experiments.md).</p>
      )}
      {experiments.map((e) => (
        <ExperimentCard key={e.name} env={env} experiment={e} now={now} />
      ))}
    </section>
  );
}

/** Said when the server keeps no exposures: the experiments are listed, their counts stay at 0. */
function NotRecording(): preact.JSX.Element {
  return (
    <div role="note" class="notice">
      <p>
        <strong>Exposures are not recorded.</strong> This server runs without <code>--exposures</code>, so every count below stays at 0.
      </p>
      <p>
        To record them, start it with <code>--exposures sqlite:PATH</code> (one server) or <code>--exposures postgres://…</code> (a fleet
        writing to one table), or set <code>RCD_EXPOSURES</code>; see docs/experiments.md.
      </p>
    </div>
  );
}

function ExperimentCard({ env, experiment: e, now }: { env: string; experiment: Experiment; now: number }): preact.JSX.Element {
  const mismatch = e.srm?.mismatch === true;
  return (
    <section aria-label={`Experiment ${e.name}`} class={mismatch ? 'experiment experiment-mismatch' : 'experiment'}>
      <h3>
        <a href={experimentHref(env, e.name)}>{e.name}</a>
        {e.disabled === true && <span class="badge"> switched off</span>}
      </h3>
      <SrmBanner experiment={e} />
      <ExperimentFacts experiment={e} now={now} />
      <VariantTable experiment={e} />
    </section>
  );
}

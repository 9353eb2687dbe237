/**
 * One experiment of an environment: the same facts, variants and mismatch alert as the list, and a
 * chart of its players per variant over time (cumulative or per hour). Re-read every few seconds
 * while open, in place.
 */
import { useMemo, useState } from 'preact/hooks';
import { api, seg } from '../api.js';
import type { ExperimentDetail } from '../experiment-types.js';
import { ExposureChart, HoursTable, type ChartMode } from '../parts/exposure-chart.js';
import { exposureTimeline } from '../parts/exposure-series.js';
import { ExperimentFacts, VariantTable } from '../parts/experiment-summary.js';
import { LIVE_REFRESH_MS, LiveStatus } from '../parts/live-status.js';
import { SrmBanner } from '../parts/srm-banner.js';
import { useLiveLoad } from '../parts/use-live-load.js';
import { useNow } from '../parts/use-now.js';
import { EnvNav } from './env-nav.js';

const MODES: [ChartMode, string][] = [
  ['cumulative', 'Cumulative players'],
  ['hourly', 'New players per hour'],
];

export function ExperimentScreen({ env, name }: { env: string; name: string }): preact.JSX.Element {
  const detail = useLiveLoad(() => api<ExperimentDetail>('GET', `environments/${seg(env)}/experiments/${seg(name)}`), [env, name], LIVE_REFRESH_MS);
  const now = useNow(1000);
  const [mode, setMode] = useState<ChartMode>('cumulative');
  const e = detail.data;
  const timeline = useMemo(() => (e === null ? null : exposureTimeline(e.hours ?? [], e.variants.map((v) => v.name))), [e]);
  return (
    <section aria-labelledby="experiment-title">
      <h2 id="experiment-title">
        Experiment {name} of {env}
      </h2>
      <EnvNav env={env} current="experiments" />
      <p>
        <a href={`#/env/${seg(env)}/experiments`}>All experiments of {env}</a>
      </p>
      <LiveStatus loaded={detail} now={now} />
      {e !== null && timeline !== null && (
        <>
          {e.disabled === true && <p class="badge">switched off</p>}
          <SrmBanner experiment={e} />
          <ExperimentFacts experiment={e} now={now} />
          <VariantTable experiment={e} />
          <h3>Players over time</h3>
          <fieldset class="chart-mode">
            <legend>Chart</legend>
            {MODES.map(([m, label]) => (
              <label key={m}>
                <input type="radio" name="chart-mode" value={m} checked={mode === m} onChange={() => setMode(m)} /> {label}
              </label>
            ))}
          </fieldset>
          <ExposureChart name={e.name} timeline={timeline} mode={mode} />
          <HoursTable name={e.name} timeline={timeline} />
        </>
      )}
    </section>
  );
}

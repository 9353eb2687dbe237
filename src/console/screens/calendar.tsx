/**
 * The calendar of scheduled changes (docs/console.md, "Calendar"): a day with a column per
 * environment, or a week with a column per day, across environments (`#/calendar`) or for one
 * (`#/env/<env>/calendar`), in this browser's zone or UTC, the hours of the chosen zone as rows. A
 * "now" line sits among the changes of the current hour, every change says how far away it is
 * ("in 3 min"), and the page re-reads every few seconds, so what falls due shows as applied.
 */
import { useState } from 'preact/hooks';
import { api, seg, type Environment, type Schedule } from '../api.js';
import { addDays, clockAt, dateAt, dayLabel, daysOf, hourAt, type CalendarDay } from '../parts/calendar-days.js';
import { relativeTime } from '../parts/experiment-format.js';
import { ErrorBox } from '../parts/messages.js';
import { useLiveLoad } from '../parts/use-live-load.js';
import { useNow } from '../parts/use-now.js';
import { BROWSER_ZONE } from '../parts/wall-time-check.js';
import { offsetAt, offsetLabel } from '../parts/zoned-time.js';
import { EnvNav } from './env-nav.js';

const CALENDAR_REFRESH_MS = 5_000;
const HOURS = Array.from({ length: 24 }, (_, h) => h);

interface Column {
  readonly key: string;
  readonly title: string;
  readonly day: CalendarDay;
  readonly env: string | null;
}

/** What a change does, in a few words: its ops (or its rollout step) and items, and its note (a step's own note only repeats that). */
function summary(s: Schedule): string {
  const what = s.rollout !== null ? `rollout step ${(s.rollout.step ?? 0) + 1}` : [...new Set(s.ops.map((o) => o.op))].join(', ');
  const items = s.items.length > 0 ? ` ${s.items.join(', ')}` : '';
  return `${what}${items}${s.note !== '' && s.rollout === null ? ` — ${s.note}` : ''}`;
}

function Entry({ s, zone, nowMs, showEnv }: { s: Schedule; zone: string; nowMs: number; showEnv: boolean }): preact.JSX.Element {
  const ms = Date.parse(s.at);
  const text = `${clockAt(zone, ms)} ${showEnv ? `${s.env}: ` : ''}${summary(s)}`;
  return (
    <li class={`cal-entry timeline-${s.status}`} aria-label={`${s.status} ${text}`}>
      <time dateTime={s.at}>{clockAt(zone, ms)}</time> {showEnv && <strong>{s.env}</strong>} {summary(s)}{' '}
      <span class="muted">
        ({s.status}, {relativeTime(ms, nowMs)})
      </span>
    </li>
  );
}

export function Calendar({ env }: { env?: string }): preact.JSX.Element {
  const [view, setView] = useState<'day' | 'week'>('week');
  const [useUtc, setUseUtc] = useState(false);
  const zone = useUtc ? 'UTC' : BROWSER_ZONE;
  const nowMs = useNow(1_000);
  const [date, setDate] = useState(dateAt(zone, Date.now()));
  const [only, setOnly] = useState('');
  const days = daysOf(zone, date, view);
  const from = new Date(days[0]!.startMs).toISOString();
  const to = new Date(days[days.length - 1]!.endMs).toISOString();
  const query = `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&limit=1000`;
  const loaded = useLiveLoad(
    async () => {
      const envs = env === undefined ? (await api<{ environments: Environment[] }>('GET', 'environments')).environments : null;
      const list = env === undefined ? await api<{ schedules: Schedule[] }>('GET', `schedules?${query}`) : await api<{ schedules: Schedule[] }>('GET', `environments/${seg(env)}/schedules?${query}`);
      const ids = envs === null ? [env as string] : envs.map((e) => e.id);
      return { envs: ids, schedules: list.schedules };
    },
    [env, query],
    CALENDAR_REFRESH_MS,
  );
  const envIds = (loaded.data?.envs ?? (env === undefined ? [] : [env])).filter((e) => only === '' || e === only);
  const schedules = (loaded.data?.schedules ?? []).filter((s) => only === '' || s.env === only);
  const columns: Column[] =
    view === 'day' ? envIds.map((e) => ({ key: e, title: e, day: days[0]!, env: e })) : days.map((d) => ({ key: d.date, title: dayLabel(d.date), day: d, env: null }));
  const place = `${env === undefined ? (only === '' ? 'every environment' : only) : env}`;
  const caption = `${view === 'day' ? dayLabel(date) : `Week of ${dayLabel(days[0]!.date)}`} in ${zone} (${offsetLabel(offsetAt(zone, days[0]!.startMs))}): ${place}`;

  function cell(col: Column, hour: number): preact.JSX.Element {
    const inCell = schedules
      .filter((s) => {
        const ms = Date.parse(s.at);
        return ms >= col.day.startMs && ms < col.day.endMs && hourAt(zone, ms) === hour && (col.env === null || s.env === col.env);
      })
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    const nowHere = nowMs >= col.day.startMs && nowMs < col.day.endMs && hourAt(zone, nowMs) === hour;
    const before = inCell.filter((s) => Date.parse(s.at) <= nowMs);
    const after = inCell.filter((s) => Date.parse(s.at) > nowMs);
    const showEnv = view === 'week' && env === undefined;
    return (
      <td key={col.key}>
        {(inCell.length > 0 || nowHere) && (
          <ul class="cal-list">
            {(nowHere ? before : inCell).map((s) => (
              <Entry key={s.id} s={s} zone={zone} nowMs={nowMs} showEnv={showEnv} />
            ))}
            {nowHere && (
              <li class="cal-now" aria-label={`Now, ${clockAt(zone, nowMs)}`}>
                now {clockAt(zone, nowMs)}
              </li>
            )}
            {nowHere && after.map((s) => <Entry key={s.id} s={s} zone={zone} nowMs={nowMs} showEnv={showEnv} />)}
          </ul>
        )}
      </td>
    );
  }

  return (
    <section aria-labelledby="calendar-title">
      <h2 id="calendar-title">Calendar of {env ?? 'every environment'}</h2>
      {env !== undefined && <EnvNav env={env} current="calendar" />}
      <div class="row">
        <label>
          View{' '}
          <select value={view} onChange={(e) => setView(e.currentTarget.value as 'day' | 'week')}>
            <option value="day">Day (a column per environment)</option>
            <option value="week">Week (a column per day)</option>
          </select>
        </label>
        <label>
          Day <input type="date" value={date} onInput={(e) => e.currentTarget.value !== '' && setDate(e.currentTarget.value)} />
        </label>
        <button type="button" onClick={() => setDate(addDays(date, view === 'day' ? -1 : -7))}>
          Earlier
        </button>
        <button type="button" onClick={() => setDate(dateAt(zone, Date.now()))}>
          Today
        </button>
        <button type="button" onClick={() => setDate(addDays(date, view === 'day' ? 1 : 7))}>
          Later
        </button>
        <label>
          Time zone{' '}
          <select value={useUtc ? 'utc' : 'local'} onChange={(e) => setUseUtc(e.currentTarget.value === 'utc')}>
            <option value="local">This browser's: {BROWSER_ZONE}</option>
            <option value="utc">UTC</option>
          </select>
        </label>
        {env === undefined && (
          <label>
            Environment{' '}
            <select value={only} onChange={(e) => setOnly(e.currentTarget.value)}>
              <option value="">every environment</option>
              {(loaded.data?.envs ?? []).map((e) => (
                <option key={e}>{e}</option>
              ))}
            </select>
          </label>
        )}
      </div>
      <ErrorBox error={loaded.error} />
      <table class="calendar">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Hour</th>
            {columns.map((c) => (
              <th key={c.key} scope="col">
                {c.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {HOURS.map((h) => (
            <tr key={h}>
              <th scope="row">{String(h).padStart(2, '0')}:00</th>
              {columns.map((c) => cell(c, h))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/**
 * Players per variant over time as an SVG chart: cumulative (one line per variant) or new players
 * per hour (bars side by side), with a legend and the same numbers as a table. Drawn by hand, styled
 * by classes from style.css (the Content-Security-Policy allows no inline styles).
 */
import { count } from './experiment-format.js';
import { HOUR_MS, hourLabel, labelledHours, niceTicks, type ExposureTimeline, type VariantSeries } from './exposure-series.js';
import { Table } from './table.js';

export type ChartMode = 'cumulative' | 'hourly';

const WIDTH = 720;
const HEIGHT = 260;
const LEFT = 56;
const RIGHT = 16;
const TOP = 12;
const BOTTOM = 30;
const PLOT_W = WIDTH - LEFT - RIGHT;
const PLOT_H = HEIGHT - TOP - BOTTOM;
/** Colours in style.css (.series-0 to .series-7), told apart by colour-blind readers too. */
const COLOURS = 8;

function seriesClass(i: number): string {
  return `series-${i % COLOURS}`;
}

function total(s: VariantSeries): number {
  return s.cumulative[s.cumulative.length - 1] ?? 0;
}

/** The chart's accessible name and its description (the totals and the span). */
function words(name: string, timeline: ExposureTimeline, mode: ChartMode): [string, string] {
  const title = mode === 'cumulative' ? `Players per variant of ${name}, cumulative` : `New players per variant of ${name}, per hour`;
  const totals = timeline.series.map((s) => `${s.name}: ${count(total(s))} players`).join(', ');
  const first = timeline.hours[0];
  const last = timeline.hours[timeline.hours.length - 1];
  const span = first === undefined || last === undefined ? 'no exposures yet' : `from ${hourLabel(first)} to ${hourLabel(last + HOUR_MS)} UTC`;
  return [title, `${totals === '' ? 'No variants' : totals}, ${span}.`];
}

export function ExposureChart({ name, timeline, mode }: { name: string; timeline: ExposureTimeline; mode: ChartMode }): preact.JSX.Element {
  const n = timeline.hours.length;
  let max = 0;
  for (const s of timeline.series) for (const v of mode === 'cumulative' ? s.cumulative : s.perHour) max = Math.max(max, v);
  const ticks = niceTicks(max);
  const top = ticks[ticks.length - 1]!;
  const band = PLOT_W / Math.max(1, n);
  const y = (v: number): number => TOP + PLOT_H - (v / top) * PLOT_H;
  const [title, desc] = words(name, timeline, mode);
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="img" aria-label={title} aria-describedby="exposure-chart-desc">
        <title>{title}</title>
        <desc id="exposure-chart-desc">{desc}</desc>
        {ticks.map((t) => (
          <g key={t}>
            <line class="grid" x1={LEFT} x2={WIDTH - RIGHT} y1={y(t)} y2={y(t)} />
            <text class="y-label" x={LEFT - 6} y={y(t) + 4}>
              {count(t)}
            </text>
          </g>
        ))}
        {labelledHours(n).map((i) => (
          <text key={i} class="x-label" x={LEFT + i * band + (mode === 'cumulative' ? 0 : band / 2)} y={HEIGHT - BOTTOM + 18}>
            {hourLabel(timeline.hours[i]!)}
          </text>
        ))}
        <line class="axis" x1={LEFT} x2={WIDTH - RIGHT} y1={TOP + PLOT_H} y2={TOP + PLOT_H} />
        <line class="axis" x1={LEFT} x2={LEFT} y1={TOP} y2={TOP + PLOT_H} />
        {n > 0 && (mode === 'cumulative' ? <Lines timeline={timeline} band={band} y={y} /> : <Bars timeline={timeline} band={band} y={y} />)}
      </svg>
      <Legend timeline={timeline} />
    </figure>
  );
}

/** One line per variant: 0 at the first hour's start, then its total at the end of each hour. */
function Lines({ timeline, band, y }: { timeline: ExposureTimeline; band: number; y: (v: number) => number }): preact.JSX.Element {
  return (
    <g>
      {timeline.series.map((s, j) => {
        const points = [`${LEFT},${y(0)}`, ...s.cumulative.map((v, i) => `${LEFT + (i + 1) * band},${y(v)}`)].join(' ');
        const end = s.cumulative.length;
        return (
          <g key={s.name} class={seriesClass(j)}>
            <polyline points={points} />
            <circle cx={LEFT + end * band} cy={y(total(s))} r={3.5} />
          </g>
        );
      })}
    </g>
  );
}

/** For each hour, one bar per variant, side by side in the hour's band. */
function Bars({ timeline, band, y }: { timeline: ExposureTimeline; band: number; y: (v: number) => number }): preact.JSX.Element {
  const k = Math.max(1, timeline.series.length);
  const width = (band * 0.8) / k;
  const base = y(0);
  return (
    <g>
      {timeline.series.map((s, j) => (
        <g key={s.name} class={seriesClass(j)}>
          {s.perHour.map((v, i) =>
            v === 0 ? null : <rect key={i} x={LEFT + i * band + band * 0.1 + j * width} y={y(v)} width={Math.max(1, width - 1)} height={base - y(v)} />,
          )}
        </g>
      ))}
    </g>
  );
}

function Legend({ timeline }: { timeline: ExposureTimeline }): preact.JSX.Element {
  return (
    <ul class="legend" aria-label="Legend">
      {timeline.series.map((s, j) => (
        <li key={s.name}>
          <svg class="swatch" viewBox="0 0 10 10" aria-hidden="true">
            <rect class={seriesClass(j)} width={10} height={10} />
          </svg>
          {s.name}: {count(total(s))} players
        </li>
      ))}
    </ul>
  );
}

/** The chart's numbers for whoever cannot see it: players per variant in each hour that saw any. */
export function HoursTable({ name, timeline }: { name: string; timeline: ExposureTimeline }): preact.JSX.Element {
  const rows = timeline.hours.map((h, i) => [h, timeline.series.map((s) => s.perHour[i] ?? 0)] as const).filter(([, values]) => values.some((v) => v > 0));
  return (
    <details>
      <summary>Players per hour as a table</summary>
      <Table caption={`New players per hour of ${name} (UTC)`} columns={['Hour (UTC)', ...timeline.series.map((s) => s.name)]}>
        {rows.map(([h, values]) => (
          <tr key={h}>
            <th scope="row">{hourLabel(h)}</th>
            {values.map((v, j) => (
              <td key={j}>{count(v)}</td>
            ))}
          </tr>
        ))}
      </Table>
    </details>
  );
}

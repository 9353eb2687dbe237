/**
 * SVG charts of the suite's results, drawn with echarts' server-side SVG renderer (no DOM, no
 * browser): each run's saturation ratio per scenario against its target and its latency percentiles
 * server vs ceiling (written beside the run's .md), and a scenario's history across recorded runs
 * (`bench:compare --history`).
 */
import * as echarts from 'echarts';
import type { BenchResults, ScenarioResult } from './results.js';
import { RATIO_TARGETS, saturationRatio } from './targets.js';

export interface ChartFile {
  /** File name beside the run's .md (no directory). */
  readonly file: string;
  readonly title: string;
  readonly svg: string;
}

const WIDTH = 900;
const HEIGHT = 420;

/** One option rendered to an SVG string; the chart instance is disposed whatever happens. */
export function renderSvg(option: echarts.EChartsOption, width = WIDTH, height = HEIGHT): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width, height });
  try {
    chart.setOption({ animation: false, backgroundColor: '#ffffff', ...option });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

function round(n: number | null, digits: number): number | null {
  return n === null || !Number.isFinite(n) ? null : Number(n.toFixed(digits));
}

function runLabel(results: BenchResults): string {
  return `${results.date.slice(0, 16).replace('T', ' ')} UTC, ${results.host}, ${results.cpus.count} cores, load ${results.loadavgAtStart.map((n) => n.toFixed(1)).join(' ')}`;
}

/**
 * Ratio per scenario against its target: wrk's saturation ratio when the run had a wrk pass (the
 * headline), autocannon's beside it, and each scenario's target as a marker.
 */
export function ratioChart(results: BenchResults): string {
  const scenarios = results.scenarios;
  const hasWrk = scenarios.some((s) => s.wrk != null);
  const series: echarts.SeriesOption[] = [];
  if (hasWrk) {
    series.push({
      name: 'saturation ratio (wrk)',
      type: 'bar',
      data: scenarios.map((s) => round(saturationRatio(s), 2)),
      label: { show: true, position: 'top', formatter: '{c}' },
    });
  }
  series.push({
    name: 'ratio under autocannon (client-bound)',
    type: 'bar',
    data: scenarios.map((s) => round(s.ratio, 2)),
    itemStyle: { opacity: hasWrk ? 0.35 : 1 },
    label: { show: !hasWrk, position: 'top', formatter: '{c}' },
  });
  series.push({
    name: 'target',
    type: 'scatter',
    symbol: 'rect',
    symbolSize: [40, 4],
    itemStyle: { color: '#d62728' },
    data: scenarios.map((s) => RATIO_TARGETS[s.name] ?? null),
  });
  return renderSvg({
    title: { text: 'server / bare ceiling, per scenario', subtext: runLabel(results), left: 'center' },
    legend: { top: 62 },
    grid: { top: 110, bottom: 60, left: 60, right: 30 },
    xAxis: { type: 'category', data: scenarios.map((s) => s.key), axisLabel: { interval: 0, rotate: 15 } },
    yAxis: { type: 'value', name: 'ratio', min: 0, max: (v: { max: number }) => Math.max(1.1, Math.ceil(v.max * 10) / 10) },
    series,
  });
}

interface Percentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number | null;
}

function latencyOf(s: ScenarioResult, side: 'server' | 'ceiling'): Percentiles {
  const w = s.wrk ?? null;
  if (w !== null) return w[side].latencyMs;
  const l = s[side].latencyMs;
  return { p50: l.p50, p90: l.p90, p99: l.p99, p999: null };
}

/**
 * Latency percentiles, server against ceiling, per scenario: wrk's (microsecond resolution) when the
 * run had a wrk pass, else autocannon's. A log axis, since p99.9 can be ten times p50, and a 512 KiB
 * scenario's latencies ten times a small one's.
 */
export function latencyChart(results: BenchResults): string {
  const scenarios = results.scenarios;
  const hasWrk = scenarios.some((s) => s.wrk != null);
  const shown = hasWrk ? scenarios.filter((s) => s.wrk != null) : scenarios;
  const keys: (keyof Percentiles)[] = hasWrk ? ['p50', 'p99', 'p999'] : ['p50', 'p90', 'p99'];
  const names: Record<keyof Percentiles, string> = { p50: 'p50', p90: 'p90', p99: 'p99', p999: 'p99.9' };
  // One colour per percentile; the shape tells server (circle) from ceiling (diamond).
  const colors: Record<keyof Percentiles, string> = { p50: '#5470c6', p90: '#3ba272', p99: '#ee6666', p999: '#9a60b4' };
  const series: echarts.SeriesOption[] = [];
  for (const side of ['server', 'ceiling'] as const) {
    for (const k of keys) {
      series.push({
        name: `${side} ${names[k]}`,
        // Points, not bars: bars on a log axis grow from 1 ms, which reads as a negative below it.
        type: 'scatter',
        symbol: side === 'server' ? 'circle' : 'diamond',
        symbolSize: side === 'server' ? 11 : 9,
        itemStyle: { color: colors[k], opacity: side === 'ceiling' ? 0.55 : 1 },
        data: shown.map((s) => round(latencyOf(s, side)[k], 3)),
      });
    }
  }
  return renderSvg({
    title: { text: `latency at ${results.options.connections} connections, server vs ceiling (${hasWrk ? 'wrk, median round' : 'autocannon'})`, subtext: runLabel(results), left: 'center' },
    legend: { top: 62 },
    grid: { top: 110, bottom: 60, left: 60, right: 30 },
    xAxis: { type: 'category', data: shown.map((s) => s.key), axisLabel: { interval: 0, rotate: 15 } },
    yAxis: { type: 'log', name: 'ms', logBase: 10, min: 0.1 },
    series,
  });
}

/** The charts of one run, named after its results file's stem. */
export function charts(results: BenchResults, stem: string): ChartFile[] {
  if (results.scenarios.length === 0) return [];
  return [
    { file: `${stem}-ratio.svg`, title: 'ratio per scenario against its target', svg: ratioChart(results) },
    { file: `${stem}-latency.svg`, title: 'latency percentiles, server vs ceiling', svg: latencyChart(results) },
  ];
}

/** One recorded run of the suite, labelled (its file's stem). */
export interface RecordedRun {
  readonly label: string;
  readonly results: BenchResults;
}

/**
 * A scenario's history across runs, oldest first: the wrk saturation ratio, autocannon's ratio and
 * the target on the left axis, server CPU per request (autocannon) on the right.
 */
export function historyChart(runs: readonly RecordedRun[], scenario: string): string {
  const picked = runs.map((r) => r.results.scenarios.find((s) => s.key === scenario) ?? null);
  const target = RATIO_TARGETS[scenario.replace(/[@/].*$/, '')];
  const series: echarts.SeriesOption[] = [
    { name: 'saturation ratio (wrk)', type: 'line', connectNulls: true, symbolSize: 8, data: picked.map((s) => (s === null ? null : round(saturationRatio(s), 2))) },
    { name: 'ratio under autocannon', type: 'line', lineStyle: { type: 'dashed' }, data: picked.map((s) => (s === null ? null : round(s.ratio, 2))) },
    { name: 'server CPU µs/request', type: 'line', yAxisIndex: 1, lineStyle: { type: 'dotted' }, data: picked.map((s) => (s === null ? null : round(s.server.cpuUsPerReq, 1))) },
  ];
  if (target !== undefined) series.push({ name: 'target', type: 'line', symbol: 'none', lineStyle: { color: '#d62728' }, itemStyle: { color: '#d62728' }, data: runs.map(() => target) });
  return renderSvg(
    {
      title: { text: `${scenario}: history over ${runs.length} recorded runs`, left: 'center' },
      legend: { top: 40 },
      grid: { top: 90, bottom: 90, left: 60, right: 70 },
      xAxis: { type: 'category', data: runs.map((r) => r.label), axisLabel: { interval: 0, rotate: 30 } },
      yAxis: [
        { type: 'value', name: 'ratio', min: 0 },
        { type: 'value', name: 'µs/req', min: 0, splitLine: { show: false } },
      ],
      series,
    },
    Math.max(WIDTH, 80 * runs.length),
    HEIGHT + 60,
  );
}

/**
 * The suite's SVG charts (bench/load/charts.ts), drawn from runs this suite recorded, parsed by a real
 * browser's XML parser: a chart that does not parse, or leaves out a scenario or a series, is a
 * chart nobody can read.
 */
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { charts, historyChart } from '../../../bench/load/charts.js';
import type { BenchResults } from '../../../bench/load/results.js';
import { launchChromium } from '../../helpers/browser.js';

function recorded(name: string): BenchResults {
  return JSON.parse(readFileSync(new URL(`../../fixtures/bench/${name}`, import.meta.url), 'utf8')) as BenchResults;
}

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

interface Parsed {
  readonly error: string | null;
  readonly root: string;
  readonly texts: string[];
}

/** Runs in the page (the test's own TypeScript has no DOM types): the browser's XML parser on an SVG text. */
const PARSE = `(text) => {
  const doc = new DOMParser().parseFromString(text, 'image/svg+xml');
  const error = doc.getElementsByTagName('parsererror')[0];
  return {
    error: error === undefined ? null : (error.textContent || 'parsererror'),
    root: doc.documentElement.tagName,
    texts: Array.from(doc.getElementsByTagName('text')).map((t) => t.textContent || ''),
  };
}`;

/** The SVG parsed as XML (image/svg+xml) in Chromium: its root element and every text it shows, or the parser's error. */
async function parseSvg(svg: string): Promise<Parsed> {
  const page = await browser.newPage();
  try {
    return await page.evaluate<Parsed>(`(${PARSE})(${JSON.stringify(svg)})`);
  } finally {
    await page.close();
  }
}

describe('charts of one run', () => {
  it('draws the ratio per scenario against its target and the latency percentiles, server vs ceiling', async () => {
    const run = recorded('2026-11-22-vm-20.json');
    const files = charts(run, '2026-11-22-vm-20');
    expect(files.map((f) => f.file)).toEqual(['2026-11-22-vm-20-ratio.svg', '2026-11-22-vm-20-latency.svg']);
    const [ratio, latency] = await Promise.all(files.map((f) => parseSvg(f.svg)));
    for (const parsed of [ratio!, latency!]) {
      expect(parsed.error).toBeNull();
      expect(parsed.root).toBe('svg');
    }
    for (const s of run.scenarios) expect(ratio!.texts, s.key).toContain(s.key);
    for (const series of ['saturation ratio (wrk)', 'ratio under autocannon (client-bound)', 'target']) expect(ratio!.texts).toContain(series);
    // The wrk ratio of mapped is printed on its bar.
    const mapped = run.scenarios.find((s) => s.name === 'mapped')!;
    expect(ratio!.texts).toContain(String(Number((mapped.wrk!.server.reqPerSec / mapped.wrk!.ceiling.reqPerSec).toFixed(2))));
    // Latency: the scenarios wrk measured (bad-requests answers errors on purpose and has no wrk pass).
    for (const s of run.scenarios.filter((x) => x.wrk !== null)) expect(latency!.texts, s.key).toContain(s.key);
    expect(latency!.texts).not.toContain('bad-requests');
    for (const series of ['server p50', 'server p99', 'server p99.9', 'ceiling p50', 'ceiling p99', 'ceiling p99.9']) expect(latency!.texts).toContain(series);
  }, 60_000);

  it('falls back to autocannon figures for a run without a wrk pass', async () => {
    const run = recorded('2026-11-22-vm-23.json');
    const [ratio, latency] = await Promise.all(charts(run, 'x').map((f) => parseSvg(f.svg)));
    expect(ratio!.error).toBeNull();
    expect(ratio!.texts).not.toContain('saturation ratio (wrk)');
    expect(ratio!.texts).toContain('ratio under autocannon (client-bound)');
    expect(latency!.error).toBeNull();
    expect(latency!.texts).toContain('server p90');
    expect(latency!.texts.some((t) => t.includes('(autocannon)'))).toBe(true);
  }, 60_000);
});

describe('history of a scenario', () => {
  it('draws one point per recorded run with the target beside them', async () => {
    const runs = ['2026-11-22-vm-17.json', '2026-11-22-vm-20.json', '2026-11-22-vm-23.json'].map((f) => ({ label: f.replace('.json', ''), results: recorded(f) }));
    const parsed = await parseSvg(historyChart(runs, 'mapped'));
    expect(parsed.error).toBeNull();
    for (const r of runs) expect(parsed.texts).toContain(r.label);
    for (const series of ['saturation ratio (wrk)', 'ratio under autocannon', 'server CPU µs/request', 'target']) expect(parsed.texts).toContain(series);
  }, 60_000);
});

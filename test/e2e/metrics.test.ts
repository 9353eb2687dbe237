/**
 * Prometheus metrics from a real server (two delivery loops, the control thread): known traffic is
 * sent over HTTP, /metrics is scraped from its own listener and parsed with a Prometheus text-format
 * parser, and the counts must match what was sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import parsePrometheusTextFormat, { type PrometheusFamily, type PrometheusSample } from 'parse-prometheus-text-format';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'key-metrics-1';
const BUNDLE = { environments: { prod: { keys: [KEY], content: { Shop: { json: { items: ['sword'] } }, Hud: { json: { a: 1 } } } } } };
const AUTH = { authorization: 'Bearer test-admin-token' };

type Sample = PrometheusSample;
type Family = PrometheusFamily;

interface Scrape {
  /** Every family as the parser reads the exposition. */
  readonly families: Map<string, Family>;
  /**
   * The same text with histogram families declared untyped: the parser folds the series of a
   * labelled histogram into one (it keeps only label-less ones), while an untyped family keeps every
   * `_bucket`, `_sum` and `_count` sample with its labels.
   */
  readonly series: Map<string, Family>;
}

async function scrape(srv: ServerProcess): Promise<Scrape> {
  const res = await fetch(srv.metricsUrl!);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  // A name may come back as several families (an untyped `_bucket` series after another name's): merged.
  const byName = (families: Family[]): Map<string, Family> => {
    const map = new Map<string, Family>();
    for (const f of families) {
      const seen = map.get(f.name);
      if (seen === undefined) map.set(f.name, { ...f, metrics: [...f.metrics] });
      else seen.metrics.push(...f.metrics);
    }
    return map;
  };
  return { families: byName(parsePrometheusTextFormat(text)), series: byName(parsePrometheusTextFormat(text.replace(/^(# TYPE \S+) histogram$/gm, '$1 untyped'))) };
}

function matches(s: Sample, match: Record<string, string>): boolean {
  return Object.entries(match).every(([k, v]) => s.labels?.[k] === v);
}

/** Sum of a family's samples whose labels include `match`. */
function total(m: Scrape, name: string, match: Record<string, string> = {}): number {
  const family = m.families.get(name);
  if (family === undefined) return 0;
  let sum = 0;
  for (const s of family.metrics) if (matches(s, match)) sum += Number(s.value);
  return sum;
}

interface Histogram {
  readonly buckets: Record<string, number>;
  readonly count: number;
  readonly sum: number;
}

/** The one series of histogram `name` with exactly the labels `match`. */
function histogram(m: Scrape, name: string, match: Record<string, string>): Histogram {
  expect(m.families.get(name)?.type, name).toBe('HISTOGRAM');
  const exact = (s: Sample, extra: string[]): boolean => matches(s, match) && Object.keys(s.labels ?? {}).every((k) => k in match || extra.includes(k));
  const one = (suffix: string): Sample | undefined => m.series.get(name + suffix)?.metrics.find((s) => exact(s, []));
  const count = one('_count');
  expect(count, `${name} ${JSON.stringify(match)}`).toBeDefined();
  const buckets: Record<string, number> = {};
  for (const s of m.series.get(name + '_bucket')?.metrics ?? []) if (exact(s, ['le'])) buckets[s.labels!.le!] = Number(s.value);
  return { buckets, count: Number(count!.value), sum: Number(one('_sum')?.value) };
}

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServer({ bundle: BUNDLE, metrics: true, admin: true, args: ['--http-threads', '2', '--threads', '2'] });
}, 30_000);
afterAll(async () => {
  await srv?.dispose();
});

describe('metrics', () => {
  it('count the requests sent, by route, status class and outcome, with their latency', async () => {
    const before = await scrape(srv);
    // Nothing was asked of the delivery API yet (the start asks nothing of it).
    expect(total(before, 'rcd_http_requests_total', { route: 'config' })).toBe(0);

    let etag = '';
    for (let i = 0; i < 5; i++) {
      const r = await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: '{"u":"p1","p":{},"v":"1.0.0"}' });
      expect(r.status).toBe(200);
      etag = r.headers.get('etag')!;
    }
    for (let i = 0; i < 3; i++) {
      const r = await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: '{"u":"p1","p":{},"v":"1.0.0"}', headers: { 'if-none-match': etag } });
      expect(r.status).toBe(304);
    }
    for (let i = 0; i < 2; i++) expect((await call(srv.url, '/api/v1/config/Shop', { key: 'not-a-key' })).status).toBe(401);
    for (let i = 0; i < 4; i++) expect((await call(srv.url, '/api/v1/config/Missing', { key: KEY })).status).toBe(404);
    for (let i = 0; i < 2; i++) expect((await call(srv.url, '/api/v1/env/catalog', { method: 'GET', key: KEY })).status).toBe(200);
    const combine = await call(srv.url, `/api/v1/combine?c=${encodeURIComponent('["Shop","Hud"]')}`, { key: KEY, body: '{"u":"p1","p":{},"v":"1.0.0"}' });
    expect(combine.status).toBe(200);
    expect((await call(srv.url, '/readyz', { method: 'GET', key: null, contentType: null })).status).toBe(200);
    expect((await call(srv.url, '/nowhere', { method: 'GET', key: null, contentType: null })).status).toBe(404);
    // Metrics are not on the delivery port.
    expect((await call(srv.url, '/metrics', { method: 'GET', key: null, contentType: null })).status).toBe(404);

    const m = await scrape(srv);
    const config = { route: 'config' };
    expect(total(m, 'rcd_http_requests_total', { ...config, status: '2xx' })).toBe(5);
    // Each loop renders its first answer on the pool; the rest come from its front cache.
    const misses = total(m, 'rcd_http_requests_total', { ...config, status: '2xx', outcome: 'miss' });
    expect(misses).toBeGreaterThanOrEqual(1);
    expect(misses + total(m, 'rcd_http_requests_total', { ...config, status: '2xx', outcome: 'hit' })).toBe(5);
    expect(total(m, 'rcd_http_requests_total', { ...config, status: '3xx', outcome: 'not_modified' })).toBe(3);
    expect(total(m, 'rcd_http_requests_total', { ...config, status: '4xx', outcome: 'none' })).toBe(6);
    expect(total(m, 'rcd_http_requests_total', config)).toBe(14);
    expect(total(m, 'rcd_http_requests_total', { route: 'catalog', status: '2xx' })).toBe(2);
    expect(total(m, 'rcd_http_requests_total', { route: 'combine', status: '2xx' })).toBe(1);
    expect(total(m, 'rcd_http_requests_total', { route: 'readyz', status: '2xx' })).toBe(1);
    expect(total(m, 'rcd_http_requests_total', { route: 'other', status: '4xx' })).toBe(2);

    // Latency: every content request that got past the key check (5 + 3 + 4 of config).
    const latency = histogram(m, 'rcd_http_request_duration_seconds', config);
    expect(latency.count).toBe(12);
    expect(latency.buckets['+Inf']).toBe(12);
    // Cumulative buckets: never decreasing, up to the count.
    const cumulative = Object.entries(latency.buckets)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([, v]) => v);
    expect(cumulative).toHaveLength(15);
    expect(cumulative.every((v, i) => i === 0 || v >= cumulative[i - 1]!)).toBe(true);
    expect(latency.sum).toBeGreaterThan(0);
    // In seconds: 12 local requests take well under a second each (milliseconds would read ~1,000 times more).
    expect(latency.sum).toBeLessThan(12);
    expect(histogram(m, 'rcd_http_request_duration_seconds', { route: 'combine' }).count).toBe(1);

    // Front cache: 5 config lookups (the 304s and 404s never look) + 2 combine items.
    const hits = total(m, 'rcd_front_cache_hits_total');
    const lookups = hits + total(m, 'rcd_front_cache_misses_total');
    expect(lookups).toBe(7);
    // Pool batches: as many as there were misses at most (one per turn), at least one.
    let batches = 0;
    for (const loop of ['0', '1']) batches += histogram(m, 'rcd_pool_batch_duration_seconds', { loop }).count;
    expect(batches).toBeGreaterThanOrEqual(1);
    expect(batches).toBeLessThanOrEqual(lookups - hits);

    // Process metrics (prom-client's default collectors).
    expect(total(m, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(total(m, 'process_open_fds')).toBeGreaterThan(0);
    expect(m.families.get('nodejs_heap_size_total_bytes')).toBeDefined();
  }, 30_000);

  it('report store writes, the applied change-log seq of every loop, and the gauges', async () => {
    const put = await fetch(`${srv.adminUrl}/admin/v1/environments/prod/content/Shop`, { method: 'PUT', headers: AUTH, body: '{"items":["axe"]}' });
    expect(put.status).toBe(200);
    const health = (await call(srv.url, '/healthz', { method: 'GET', key: null, contentType: null })).json as { seq: number };
    // Loop gauges are sampled every second: scraped until both loops' sample shows the write.
    const applied = async (): Promise<boolean> => {
      const sample = await scrape(srv);
      return ['0', '1'].every((loop) => total(sample, 'rcd_loop_applied_seq', { loop }) === health.seq);
    };
    await expect.poll(applied, { timeout: 10_000, interval: 100 }).toBe(true);
    const m = await scrape(srv);
    const writes = histogram(m, 'rcd_store_write_duration_seconds', { operation: 'putContent' });
    expect(writes.count).toBe(1);
    expect(total(m, 'rcd_store_write_errors_total', { operation: 'putContent' })).toBe(0);
    expect(total(m, 'rcd_feed_applied_seq')).toBe(health.seq);
    for (const loop of ['0', '1']) expect(total(m, 'rcd_loop_applied_seq', { loop })).toBe(health.seq);
    expect(histogram(m, 'rcd_feed_publish_duration_seconds', {}).count).toBeGreaterThanOrEqual(1);
    expect(total(m, 'rcd_store_available')).toBe(1);
    expect(total(m, 'rcd_front_cache_entries')).toBeGreaterThanOrEqual(2);
    expect(total(m, 'rcd_front_cache_bytes')).toBeGreaterThan(0);
    expect(total(m, 'rcd_pool_pending_jobs')).toBe(0);
    expect(total(m, 'rcd_webhook_backlog')).toBe(0);
  }, 30_000);

  it('a metrics port in use stops the start with one line; --metrics false serves none', async () => {
    const port = new URL(srv.metricsUrl!).port;
    await expect(startServer({ args: ['--metrics', 'true', '--metrics-port', port] })).rejects.toThrow(/cannot listen on the metrics address 127\.0\.0\.1:\d+/);
    const off = await startServer({});
    try {
      expect(off.stdout()).not.toMatch(/metrics at/);
      expect(off.metricsUrl).toBeNull();
    } finally {
      await off.dispose();
    }
  }, 60_000);
});

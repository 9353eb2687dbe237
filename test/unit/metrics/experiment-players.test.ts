/**
 * rcd_experiment_players (src/metrics/experiment-players.ts): players per variant summed over the
 * hours, and the series bound: whole experiments in name order, the rest summed per environment and
 * variant as experiment="_other", never more than the bound in all.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { HourCount } from '../../../src/exposures/db.js';
import { PostgresExposureReader } from '../../../src/exposures/postgres-reader.js';
import { SQLITE_SCHEMA } from '../../../src/exposures/schema.js';
import { SqliteExposureReader } from '../../../src/exposures/sqlite-reader.js';
import { experimentPlayerSamples, experimentPlayersMetric, MAX_SERIES } from '../../../src/metrics/experiment-players.js';
import { newLoopCounters, newServerCounters } from '../../../src/metrics/layout.js';
import { metricsRegistry } from '../../../src/metrics/registry.js';

function hour(environment: string, experiment: string, variant: string, players: number, hourMs = 0): HourCount {
  return { environment, experiment, variant, hourMs, players, firstMs: hourMs, lastMs: hourMs };
}

describe('rcd_experiment_players', () => {
  it('sums each variant over its hours, in (environment, experiment, variant) order', () => {
    const samples = experimentPlayerSamples([hour('live', 'b', 'B', 2), hour('live', 'b', 'A', 1), hour('dev', 'z', 'A', 4), hour('live', 'b', 'A', 5, 3_600_000)]);
    expect(samples).toEqual([
      { labels: { environment: 'dev', experiment: 'z', variant: 'A' }, value: 4 },
      { labels: { environment: 'live', experiment: 'b', variant: 'A' }, value: 6 },
      { labels: { environment: 'live', experiment: 'b', variant: 'B' }, value: 2 },
    ]);
  });

  it('past the bound, whole experiments are kept and the rest summed as experiment="_other"', () => {
    // 10 experiments of 2 variants, bound 9: 3 kept whole (6 series) + 2 "_other" series (A, B) = 8.
    const hours: HourCount[] = [];
    for (let i = 0; i < 10; i++) hours.push(hour('live', `e${i}`, 'A', 10), hour('live', `e${i}`, 'B', 1));
    const samples = experimentPlayerSamples(hours, 9);
    expect(samples.length).toBeLessThanOrEqual(9);
    expect(samples.map((s) => `${s.labels.experiment}/${s.labels.variant}=${s.value}`)).toEqual([
      'e0/A=10', 'e0/B=1', 'e1/A=10', 'e1/B=1', 'e2/A=10', 'e2/B=1', '_other/A=70', '_other/B=7',
    ]);
    // Nothing lost: the sum is every player.
    expect(samples.reduce((n, s) => n + s.value, 0)).toBe(110);
  });

  it('never serves more than 500 series, whatever the experiments and environments', () => {
    const hours: HourCount[] = [];
    for (let env = 0; env < 4; env++) for (let e = 0; e < 300; e++) for (const v of ['A', 'B', 'C']) hours.push(hour(`env${env}`, `exp${String(e).padStart(3, '0')}`, v, 1));
    const samples = experimentPlayerSamples(hours);
    expect(samples.length).toBeLessThanOrEqual(MAX_SERIES);
    expect(samples.reduce((n, s) => n + s.value, 0)).toBe(4 * 300 * 3);
    expect(samples.filter((s) => s.labels.experiment === '_other').map((s) => `${s.labels.environment}/${s.labels.variant}`)).toContain('env3/C');
  });

  it('a database that cannot be read gives no series, not a failed scrape', async () => {
    // Nothing listens on port 1.
    const unreachable = new PostgresExposureReader('postgres://nobody:x@127.0.0.1:1/none');
    try {
      expect(await experimentPlayersMetric(unreachable).get()).toMatchObject({ name: 'rcd_experiment_players', type: 'gauge', values: [] });
    } finally {
      await unreachable.close();
    }
  });

  it('is served by the registry from a real exposure file, beside the other metrics; absent without one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-metrics-exp-'));
    const path = join(dir, 'exposures.db');
    const db = new Database(path);
    db.exec(SQLITE_SCHEMA);
    const insert = db.prepare('INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms) VALUES (?, ?, ?, ?, ?, 0, 0)');
    insert.run('live', 'Shop:price', 'A', 0, 3);
    insert.run('live', 'Shop:price', 'A', 3_600_000, 4);
    insert.run('live', 'Shop:price', 'B "quoted"', 0, 5);
    db.close();
    const reader = new SqliteExposureReader(path);
    try {
      const text = await metricsRegistry([newLoopCounters()], newServerCounters(), null, reader).metrics();
      expect(text).toContain('# TYPE rcd_experiment_players gauge\n');
      expect(text).toContain('rcd_experiment_players{environment="live",experiment="Shop:price",variant="A"} 7\n');
      expect(text).toContain('rcd_experiment_players{environment="live",experiment="Shop:price",variant="B \\"quoted\\""} 5\n');
      expect(text).toContain('rcd_http_requests_total');
      expect(await metricsRegistry([newLoopCounters()], newServerCounters()).metrics()).not.toContain('rcd_experiment_players');
    } finally {
      await reader.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

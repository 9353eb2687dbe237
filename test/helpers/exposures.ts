/**
 * Reading what a real server recorded of its experiment exposures (docs/experiments.md): the
 * assignment table and its per-hour counts straight from the database the server writes
 * (`--exposures sqlite:PATH` or `postgres://...`), the admin readout, the exposure metrics, players
 * chosen by their A/B group, and many players sent at once over several connections.
 */
import { existsSync, rmSync } from 'node:fs';
import { afterAll } from 'vitest';
import Database from 'better-sqlite3';
import postgres from 'postgres';
import { userMod, userUid } from '../../src/shared/identity.js';
import type { ServerProcess } from './server-process.js';

/** One row of rcd_exposures, its times as ms since the epoch and its dimensions parsed. */
export interface ExposureRecord {
  readonly environment: string;
  readonly experiment: string;
  readonly player: string;
  readonly variant: string;
  readonly firstSeenMs: number;
  readonly appVersion: string | null;
  readonly dimensions: Record<string, unknown>;
  readonly movedTo: string | null;
  readonly movedAtMs: number | null;
}

/** One row of rcd_exposure_counts. */
export interface CountRecord {
  readonly environment: string;
  readonly experiment: string;
  readonly variant: string;
  readonly hourMs: number;
  readonly players: number;
  readonly firstMs: number;
  readonly lastMs: number;
}

export interface Recorded {
  /** In (environment, experiment, player) order. */
  readonly rows: ExposureRecord[];
  readonly counts: CountRecord[];
}

const NOTHING: Recorded = { rows: [], counts: [] };

/** Everything in the exposure database at `url` (the value given to --exposures); empty before the writer created it. */
export function readExposures(url: string): Promise<Recorded> {
  return url.startsWith('sqlite:') ? Promise.resolve(readSqlite(url.slice('sqlite:'.length))) : readPostgres(url);
}

interface SqliteRow {
  environment: string;
  experiment: string;
  player: string;
  variant: string;
  first_seen: string;
  app_version: string | null;
  dimensions: string;
  moved_to: string | null;
  moved_at: string | null;
}

interface SqliteCount {
  environment: string;
  experiment: string;
  variant: string;
  hour: number;
  players: number;
  first_ms: number;
  last_ms: number;
}

function readSqlite(path: string): Recorded {
  if (!existsSync(path)) return NOTHING;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('rcd_exposures', 'rcd_exposure_counts')").all() as { name: string }[];
    if (tables.length < 2) return NOTHING;
    const rows = db.prepare('SELECT * FROM rcd_exposures ORDER BY environment, experiment, player').all() as SqliteRow[];
    const counts = db.prepare('SELECT * FROM rcd_exposure_counts ORDER BY environment, experiment, variant, hour').all() as SqliteCount[];
    return {
      rows: rows.map((r) => ({
        environment: r.environment,
        experiment: r.experiment,
        player: r.player,
        variant: r.variant,
        firstSeenMs: isoMs(r.first_seen),
        appVersion: r.app_version,
        dimensions: JSON.parse(r.dimensions) as Record<string, unknown>,
        movedTo: r.moved_to,
        movedAtMs: r.moved_at === null ? null : isoMs(r.moved_at),
      })),
      counts: counts.map((c) => ({ environment: c.environment, experiment: c.experiment, variant: c.variant, hourMs: Number(c.hour), players: Number(c.players), firstMs: Number(c.first_ms), lastMs: Number(c.last_ms) })),
    };
  } finally {
    db.close();
  }
}

/** An ISO-8601 UTC time with milliseconds, as the SQLite table holds first_seen and moved_at. */
function isoMs(text: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(text)) throw new Error(`not an ISO-8601 UTC time with ms: ${JSON.stringify(text)}`);
  return Date.parse(text);
}

interface PostgresRow {
  environment: string;
  experiment: string;
  player: string;
  variant: string;
  first_seen: Date;
  app_version: string | null;
  dimensions: Record<string, unknown>;
  moved_to: string | null;
  moved_at: Date | null;
}

interface PostgresCount {
  environment: string;
  experiment: string;
  variant: string;
  hour: string;
  players: string;
  first_ms: string;
  last_ms: string;
}

async function readPostgres(url: string): Promise<Recorded> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    const present = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_tables WHERE tablename IN ('rcd_exposures', 'rcd_exposure_counts')`;
    if (present[0]!.n < 2) return NOTHING;
    // COLLATE "C": byte order, as SQLite and JavaScript's sort of ASCII names order them.
    const rows = await sql<PostgresRow[]>`SELECT * FROM rcd_exposures ORDER BY environment COLLATE "C", experiment COLLATE "C", player COLLATE "C"`;
    const counts = await sql<PostgresCount[]>`SELECT * FROM rcd_exposure_counts ORDER BY environment COLLATE "C", experiment COLLATE "C", variant COLLATE "C", hour`;
    return {
      rows: rows.map((r) => ({
        environment: r.environment,
        experiment: r.experiment,
        player: r.player,
        variant: r.variant,
        firstSeenMs: r.first_seen.getTime(),
        appVersion: r.app_version,
        dimensions: r.dimensions,
        movedTo: r.moved_to,
        movedAtMs: r.moved_at === null ? null : r.moved_at.getTime(),
      })),
      counts: counts.map((c) => ({ environment: c.environment, experiment: c.experiment, variant: c.variant, hourMs: Number(c.hour), players: Number(c.players), firstMs: Number(c.first_ms), lastMs: Number(c.last_ms) })),
    };
  } finally {
    await sql.end();
  }
}

/** Players per variant of one experiment: in the rows, and summed from the counts table. */
export function perVariant(rec: Recorded, environment: string, experiment: string): { rows: Record<string, number>; counts: Record<string, number> } {
  const rows: Record<string, number> = {};
  const counts: Record<string, number> = {};
  for (const r of rec.rows) if (r.environment === environment && r.experiment === experiment) rows[r.variant] = (rows[r.variant] ?? 0) + 1;
  for (const c of rec.counts) if (c.environment === environment && c.experiment === experiment) counts[c.variant] = (counts[c.variant] ?? 0) + c.players;
  return { rows, counts };
}

/** `n` player ids whose A/B group (meta.mod) lies in [lo, hi], each `prefix` and a number. */
export function playersIn(lo: number, hi: number, n: number, prefix = 'player-'): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const u = `${prefix}${i}`;
    const mod = userMod(userUid(u));
    if (mod >= lo && mod <= hi) out.push(u);
  }
  return out;
}

/** The variant `meta.seg` names for a segment, or null when that rule did not apply. */
export function variantOf(seg: readonly { readonly n: string; readonly v: string | null }[] | undefined, segment: string): string | null {
  return seg?.find((s) => s.n === segment)?.v ?? null;
}

/** Runs `task(i)` for i in [0, count) with `workers` of them in flight at once (each fetch keeps its own connection busy). */
export async function inParallel(count: number, workers: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** The sum of a metric's samples (every label set) on a metrics listener; 0 when the metric is absent. */
export async function metricTotal(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  let sum = 0;
  const line = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`);
  for (const l of text.split('\n')) {
    const m = line.exec(l);
    if (m !== null) sum += Number(m[1]);
  }
  return sum;
}

/** One experiment in the admin readout (docs/admin.md, "Experiments"). */
export interface ExperimentReadout {
  readonly name: string;
  readonly item: string;
  readonly items: readonly string[];
  readonly segment: string;
  readonly variants: readonly { readonly name: string; readonly share: number; readonly players: number; readonly days: readonly { readonly day: string; readonly players: number }[] }[];
  readonly players: number;
  readonly moved: number;
  readonly srm: { readonly chiSquare: number; readonly pValue: number; readonly mismatch: boolean } | null;
  readonly firstExposure: string | null;
  readonly lastExposure: string | null;
  readonly hours?: readonly { readonly hour: string; readonly variants: Record<string, number> }[];
}

const AUTH = { authorization: 'Bearer test-admin-token' };

/** GET /admin/v1/environments/:env/experiments. */
export async function experimentsOf(adminUrl: string, env: string): Promise<{ recording: boolean; experiments: ExperimentReadout[] }> {
  const res = await fetch(`${adminUrl}/admin/v1/environments/${encodeURIComponent(env)}/experiments`, { headers: AUTH });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET experiments of ${env}: ${res.status} ${text}`);
  return JSON.parse(text) as { recording: boolean; experiments: ExperimentReadout[] };
}

/** GET /admin/v1/environments/:env/experiments/:name: its status and parsed body. */
export async function experimentOf(adminUrl: string, env: string, name: string): Promise<{ status: number; body: ExperimentReadout & { error?: { code: string } } }> {
  const res = await fetch(`${adminUrl}/admin/v1/environments/${encodeURIComponent(env)}/experiments/${encodeURIComponent(name)}`, { headers: AUTH });
  return { status: res.status, body: JSON.parse(await res.text()) as ExperimentReadout & { error?: { code: string } } };
}

/** Chi-square of observed players against configured shares, as the readout computes it. */
export function chiSquare(observed: readonly number[], shares: readonly number[]): number {
  const total = observed.reduce((a, b) => a + b, 0);
  const shareSum = shares.reduce((a, b) => a + b, 0);
  let chi = 0;
  observed.forEach((o, i) => {
    const expected = (total * shares[i]!) / shareSum;
    chi += ((o - expected) * (o - expected)) / expected;
  });
  return chi;
}

/**
 * What a test file starts and must let go: its servers (disposed after its tests, each data folder
 * removed) and then its databases (`cleanups`, e.g. a database's drop).
 */
export function releasedAfterAll(): { readonly running: ServerProcess[]; readonly cleanups: (() => Promise<void>)[] } {
  const running: ServerProcess[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const s of running.splice(0)) {
      await s.dispose();
      rmSync(s.dir, { recursive: true, force: true });
    }
    for (const c of cleanups.splice(0)) await c();
  });
  return { running, cleanups };
}

/**
 * The exposure tables read back for tests, the same shape for both kinds: rows with their times in
 * milliseconds, counts as numbers, each in key order.
 */
import { createRequire } from 'node:module';
import postgres from 'postgres';
import type { ExposureRow } from '../../../src/exposures/db.js';

export interface TableRow {
  environment: string;
  experiment: string;
  player: string;
  variant: string;
  firstMs: number;
  appVersion: string | null;
  dimensions: Record<string, unknown>;
  movedTo: string | null;
  movedMs: number | null;
}

export interface CountRow {
  environment: string;
  experiment: string;
  variant: string;
  hour: number;
  players: number;
  firstMs: number;
  lastMs: number;
}

export interface Tables {
  rows: TableRow[];
  counts: CountRow[];
}

interface SqliteDb {
  prepare(sql: string): { all(): Record<string, unknown>[] };
  close(): void;
}
const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as new (path: string, opts?: { readonly?: boolean }) => SqliteDb;

const ROWS = `SELECT environment, experiment, player, variant, first_seen, app_version, dimensions, moved_to, moved_at FROM rcd_exposures`;
const COUNTS = `SELECT environment, experiment, variant, hour, players, first_ms, last_ms FROM rcd_exposure_counts`;

function byKey<T extends { environment: string; experiment: string }>(key: (t: T) => string): (a: T, b: T) => number {
  return (a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
}

function msOf(v: unknown): number | null {
  if (v === null) return null;
  return v instanceof Date ? v.getTime() : Date.parse(v as string);
}

function textOrNull(v: unknown): string | null {
  return v === null ? null : (v as string);
}

function shape(rows: Record<string, unknown>[], counts: Record<string, unknown>[]): Tables {
  return {
    rows: rows
      .map((r) => ({
        environment: r.environment as string,
        experiment: r.experiment as string,
        player: r.player as string,
        variant: r.variant as string,
        firstMs: msOf(r.first_seen)!,
        appVersion: textOrNull(r.app_version),
        dimensions: (typeof r.dimensions === 'string' ? JSON.parse(r.dimensions) : r.dimensions) as Record<string, unknown>,
        movedTo: textOrNull(r.moved_to),
        movedMs: msOf(r.moved_at),
      }))
      .sort(byKey((r) => JSON.stringify([r.environment, r.experiment, r.player]))),
    counts: counts
      .map((c) => ({
        environment: c.environment as string,
        experiment: c.experiment as string,
        variant: c.variant as string,
        hour: Number(c.hour),
        players: Number(c.players),
        firstMs: Number(c.first_ms),
        lastMs: Number(c.last_ms),
      }))
      .sort(byKey((c) => JSON.stringify([c.environment, c.experiment, c.variant, c.hour]))),
  };
}

export function readSqlite(path: string): Tables {
  const db = new Database(path, { readonly: true });
  try {
    return shape(db.prepare(ROWS).all(), db.prepare(COUNTS).all());
  } finally {
    db.close();
  }
}

export async function readPostgres(url: string): Promise<Tables> {
  const sql = postgres(url, { max: 1, onnotice: () => undefined });
  try {
    return shape(await sql.unsafe(ROWS), await sql.unsafe(COUNTS));
  } finally {
    await sql.end();
  }
}

/** A row as a loop would note it: environment `prod`, app version and dimensions optional. */
export function row(experiment: string, player: string, variant: string, atMs: number, extra: Partial<ExposureRow> = {}): ExposureRow {
  return { environment: 'prod', experiment, player, variant, appVersion: null, dimensions: '{}', atMs, ...extra };
}

/** Players per (experiment, variant) in the counts table, summed over hours. */
export function playersByVariant(t: Tables): Record<string, number> {
  const out: Record<string, number> = {};
  for (const c of t.counts) out[`${c.experiment}/${c.variant}`] = (out[`${c.experiment}/${c.variant}`] ?? 0) + c.players;
  return out;
}

/** Rows per (experiment, variant) in the rows table. */
export function rowsByVariant(t: Tables): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of t.rows) out[`${r.experiment}/${r.variant}`] = (out[`${r.experiment}/${r.variant}`] ?? 0) + 1;
  return out;
}

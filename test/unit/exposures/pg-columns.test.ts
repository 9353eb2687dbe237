// The PostgreSQL writer sends its rows as array literals it builds itself (src/exposures/pg-columns.ts).
// These tests hand the literals to a real PostgreSQL, as the writer does, and read every row back:
// fuzzed texts full of what an array literal treats specially must come back exactly as sent.
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLUMN_ROWS, arrayElement, columnParameters, insertColumns, type InsertColumns } from '../../../src/exposures/pg-columns.js';
import type { ExposureRow } from '../../../src/exposures/db.js';
import { createDatabase } from '../../helpers/postgres.js';
import { Rng } from '../../helpers/fuzz.js';

let db: { url: string; drop: () => Promise<void> };
let sql: postgres.Sql;

beforeAll(async () => {
  db = await createDatabase();
  sql = postgres(db.url, { max: 1, onnotice: () => undefined });
});

afterAll(async () => {
  await sql.end({ timeout: 1 });
  await db.drop();
});

interface Back {
  readonly environment: string;
  readonly experiment: string;
  readonly player: string;
  readonly variant: string;
  readonly at: number;
  readonly app_version: string | null;
  readonly dimensions: string;
}

/** The columns as PostgreSQL reads them through the writer's own query (COLUMN_ROWS), row by row in their order. */
async function readBack(c: InsertColumns): Promise<Back[]> {
  return sql.unsafe<Back[]>(
    `SELECT e AS environment, x AS experiment, p AS player, v AS variant, t AS at, a AS app_version, d AS dimensions
       FROM (${COLUMN_ROWS}) AS r
      ORDER BY i`,
    columnParameters(c),
    { prepare: true },
  );
}

/** Pieces an array literal reads specially, and text that is not ASCII. */
const PIECES = ['"', '\\', '\\\\', '{', '}', ',', ' ', '  ', '\t', '\n', 'NULL', 'null', '""', "'", ';', 'é', '日本', '😀', 'a', 'B', '0', '-1.5', '{"a":1}', '\\"'];

function fuzzText(rng: Rng): string {
  let s = '';
  const n = Math.floor(rng.next() * 6);
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(rng.next() * PIECES.length)]!;
  return s;
}

function fuzzRows(rng: Rng, n: number): ExposureRow[] {
  const rows: ExposureRow[] = [];
  // A few environments, experiments and variants shared by many rows, as a batch has them.
  const shared = Array.from({ length: 6 }, () => fuzzText(rng) || 'x');
  const pick = (): string => shared[Math.floor(rng.next() * shared.length)]!;
  for (let i = 0; i < n; i++) {
    rows.push({
      environment: pick(),
      experiment: pick(),
      player: fuzzText(rng),
      variant: pick(),
      appVersion: rng.next() < 0.2 ? null : rng.next() < 0.5 ? pick() : fuzzText(rng),
      dimensions: JSON.stringify({ country: fuzzText(rng), level: Math.floor(rng.next() * 100) }),
      atMs: 1_764_460_800_000 + Math.floor(rng.next() * 86_400_000),
    });
  }
  return rows;
}

describe('the PostgreSQL writer\'s array literals', () => {
  it('round-trip fuzzed texts through PostgreSQL exactly, NULL only for a row without an app version', async () => {
    const rng = new Rng(1075);
    for (let round = 0; round < 20; round++) {
      const rows = fuzzRows(rng, 300);
      const back = await readBack(insertColumns(rows));
      expect(back).toHaveLength(rows.length);
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        expect(back[i]).toEqual({ environment: r.environment, experiment: r.experiment, player: r.player, variant: r.variant, at: r.atMs, app_version: r.appVersion, dimensions: r.dimensions });
      }
    }
  });

  it('name each shared text once and quote every element', () => {
    const rows: ExposureRow[] = ['p1', 'p "2"', 'back\\slash'].map((player, i) => ({
      environment: 'live',
      experiment: 'Shop:price',
      player,
      variant: i === 1 ? 'B' : 'A',
      appVersion: i === 2 ? null : '2.0.0',
      dimensions: '{}',
      atMs: 1000 + i,
    }));
    expect(insertColumns(rows)).toEqual({
      texts: '{"live","Shop:price","A","2.0.0","{}","B"}',
      environments: '{1,1,1}',
      experiments: '{2,2,2}',
      variants: '{3,6,3}',
      appVersions: '{4,4,0}',
      dimensions: '{5,5,5}',
      players: '{"p1","p \\"2\\"","back\\\\slash"}',
      at: '{1000,1001,1002}',
    });
    expect(arrayElement('')).toBe('""');
    expect(arrayElement('NULL')).toBe('"NULL"');
  });

  it('send a lone surrogate as U+FFFD, and PostgreSQL refuses a NUL as a data exception', async () => {
    const row = (player: string): ExposureRow => ({ environment: 'live', experiment: 'e', player, variant: 'A', appVersion: null, dimensions: '{}', atMs: 0 });
    const back = await readBack(insertColumns([row('a\uD800b')]));
    expect(back[0]!.player).toBe('a\uFFFDb');
    await expect(readBack(insertColumns([row('bad\u0000player')]))).rejects.toMatchObject({ code: expect.stringMatching(/^22/) as unknown });
  });
});

/**
 * The exposure writers on a real SQLite file and a real PostgreSQL database: the first exposure
 * wins, a move to another variant is recorded and not merged, repeats within a batch and across
 * batches count once, the counts table equals the rows exactly, and on PostgreSQL two writers with
 * overlapping players leave one row per player and exact counts.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openPostgresExposureWriter } from '../../../src/exposures/postgres.js';
import { openSqliteExposureWriter } from '../../../src/exposures/sqlite.js';
import type { ExposureRow, ExposureWriter } from '../../../src/exposures/db.js';
import { createDatabase } from '../../helpers/postgres.js';
import { playersByVariant, readPostgres, readSqlite, row, rowsByVariant, type Tables } from './tables.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 29, 3, 0, 0);

interface Kind {
  readonly name: string;
  setUp(): Promise<void>;
  open(): Promise<ExposureWriter>;
  read(): Promise<Tables>;
  tearDown(): Promise<void>;
}

function sqliteKind(): Kind {
  let dir = '';
  return {
    name: 'SQLite',
    setUp: () => {
      dir = mkdtempSync(join(tmpdir(), 'rcd-exposures-'));
      return Promise.resolve();
    },
    open: () => Promise.resolve(openSqliteExposureWriter(join(dir, 'exposures.db'))),
    read: () => Promise.resolve(readSqlite(join(dir, 'exposures.db'))),
    tearDown: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

function postgresKind(): Kind {
  let db: { url: string; drop: () => Promise<void> } | null = null;
  return {
    name: 'PostgreSQL',
    setUp: async () => {
      db = await createDatabase();
    },
    open: () => openPostgresExposureWriter(db!.url),
    read: () => readPostgres(db!.url),
    tearDown: async () => {
      await db?.drop();
    },
  };
}

describe.each([sqliteKind(), postgresKind()])('the exposure writer on $name', (kind) => {
  const writers: ExposureWriter[] = [];
  const open = async (): Promise<ExposureWriter> => {
    const w = await kind.open();
    writers.push(w);
    return w;
  };
  beforeEach(() => kind.setUp());
  afterEach(async () => {
    for (const w of writers.splice(0)) await w.close();
    await kind.tearDown();
  });

  it('writes one row per player with what the loop noted, and counts each once per hour and variant', async () => {
    const w = await open();
    const rows: ExposureRow[] = [
      row('Shop:price', 'p1', 'A', T0 + 5, { appVersion: '2.1.0', dimensions: '{"country":"DE","level":12}' }),
      row('Shop:price', 'p2', 'B', T0 + 10),
      row('Shop:price', 'p3', 'A', T0 + HOUR + 7),
      row('Bonus:vip', 'p1', 'big', T0 + 20, { environment: 'staging' }),
      row('Shop:price', '', 'B', T0 + 30),
    ];
    expect(await w.write(rows)).toEqual({ inserted: 5, moved: 0 });
    const t = await kind.read();
    expect(t.rows).toHaveLength(5);
    expect(t.rows.find((r) => r.player === 'p1' && r.experiment === 'Shop:price')).toEqual({
      environment: 'prod',
      experiment: 'Shop:price',
      player: 'p1',
      variant: 'A',
      firstMs: T0 + 5,
      appVersion: '2.1.0',
      dimensions: { country: 'DE', level: 12 },
      movedTo: null,
      movedMs: null,
    });
    // The empty `u` is a player too.
    expect(t.rows.some((r) => r.player === '' && r.variant === 'B')).toBe(true);
    expect(t.counts).toEqual([
      { environment: 'prod', experiment: 'Shop:price', variant: 'A', hour: T0, players: 1, firstMs: T0 + 5, lastMs: T0 + 5 },
      { environment: 'prod', experiment: 'Shop:price', variant: 'A', hour: T0 + HOUR, players: 1, firstMs: T0 + HOUR + 7, lastMs: T0 + HOUR + 7 },
      { environment: 'prod', experiment: 'Shop:price', variant: 'B', hour: T0, players: 2, firstMs: T0 + 10, lastMs: T0 + 30 },
      { environment: 'staging', experiment: 'Bonus:vip', variant: 'big', hour: T0, players: 1, firstMs: T0 + 20, lastMs: T0 + 20 },
    ]);
  });

  it('the first exposure wins: a later one never rewrites variant or first_seen, and a move is recorded', async () => {
    const w = await open();
    await w.write([row('Shop:price', 'p1', 'A', T0), row('Shop:price', 'p2', 'A', T0)]);
    // p1 again with A (a repeat), p2 with B (a move), later.
    expect(await w.write([row('Shop:price', 'p1', 'A', T0 + 100), row('Shop:price', 'p2', 'B', T0 + 200)])).toEqual({ inserted: 0, moved: 1 });
    // p2 with B again: already moved there, nothing changes; p2 back to A: the row keeps its move.
    expect(await w.write([row('Shop:price', 'p2', 'B', T0 + 300)])).toEqual({ inserted: 0, moved: 0 });
    expect(await w.write([row('Shop:price', 'p2', 'A', T0 + 400)])).toEqual({ inserted: 0, moved: 0 });
    // p2 to a third variant: the newest other variant.
    expect(await w.write([row('Shop:price', 'p2', 'C', T0 + 500)])).toEqual({ inserted: 0, moved: 1 });
    const t = await kind.read();
    expect(t.rows.map((r) => [r.player, r.variant, r.firstMs - T0, r.movedTo, r.movedMs === null ? null : r.movedMs - T0])).toEqual([
      ['p1', 'A', 0, null, null],
      ['p2', 'A', 0, 'C', 500],
    ]);
    expect(playersByVariant(t)).toEqual({ 'Shop:price/A': 2 });
  });

  it('within one batch: repeats count once, the first in arrival order wins, a later variant is a move', async () => {
    const w = await open();
    const outcome = await w.write([
      row('X', 'p9', 'B', T0 + 1),
      row('X', 'p1', 'A', T0 + 2),
      row('X', 'p1', 'A', T0 + 3),
      row('X', 'p9', 'B', T0 + 4),
      row('X', 'p1', 'B', T0 + 5),
      row('X', 'p1', 'B', T0 + 6),
      row('X', 'p5', 'A', T0 + 7),
    ]);
    expect(outcome).toEqual({ inserted: 3, moved: 1 });
    const t = await kind.read();
    expect(t.rows.map((r) => [r.player, r.variant, r.firstMs - T0, r.movedTo, r.movedMs === null ? null : r.movedMs - T0])).toEqual([
      ['p1', 'A', 2, 'B', 5],
      ['p5', 'A', 7, null, null],
      ['p9', 'B', 1, null, null],
    ]);
    expect(playersByVariant(t)).toEqual({ 'X/A': 2, 'X/B': 1 });
  });

  it('counts equal the rows exactly over many batches with repeats across them', async () => {
    const w = await open();
    const players = 3000;
    const seen = new Set<string>();
    let inserted = 0;
    // Six batches of 1,000 rows, players drawn with repeats; the variant follows the player (mod 3).
    let x = 12345;
    for (let b = 0; b < 6; b++) {
      const rows: ExposureRow[] = [];
      for (let i = 0; i < 1000; i++) {
        x = (x * 1103515245 + 12345) % 2 ** 31;
        const p = x % players;
        rows.push(row('Shop:price', `u${p}`, ['A', 'B', 'C'][p % 3]!, T0 + b * 1000 + i));
        seen.add(`u${p}`);
      }
      inserted += (await w.write(rows)).inserted;
    }
    const t = await kind.read();
    expect(inserted).toBe(seen.size);
    expect(t.rows).toHaveLength(seen.size);
    expect(playersByVariant(t)).toEqual(rowsByVariant(t));
    const expected = { 'Shop:price/A': 0, 'Shop:price/B': 0, 'Shop:price/C': 0 };
    for (const p of seen) expected[`Shop:price/${['A', 'B', 'C'][Number(p.slice(1)) % 3]}` as keyof typeof expected]++;
    expect(playersByVariant(t)).toEqual(expected);
  });

  it('writing a batch again (a retry after a lost commit) inserts, counts and moves nothing twice', async () => {
    const w = await open();
    const rows = [row('X', 'p1', 'A', T0), row('X', 'p2', 'A', T0), row('X', 'p2', 'B', T0 + 1)];
    expect(await w.write(rows)).toEqual({ inserted: 2, moved: 1 });
    expect(await w.write(rows)).toEqual({ inserted: 0, moved: 0 });
    const t = await kind.read();
    expect(t.rows).toHaveLength(2);
    expect(playersByVariant(t)).toEqual({ 'X/A': 2 });
  });
});

describe('the SQLite exposure file', () => {
  it('is in WAL mode and readable by the server\'s user only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-exposures-'));
    try {
      const w = openSqliteExposureWriter(join(dir, 'sub', 'exposures.db'));
      void w.close();
      expect(statSync(join(dir, 'sub', 'exposures.db')).mode & 0o077).toBe(0);
      const t = readSqlite(join(dir, 'sub', 'exposures.db'));
      expect(t.rows).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('two PostgreSQL writers at once (two nodes of a fleet)', () => {
  let db: { url: string; drop: () => Promise<void> };
  beforeEach(async () => {
    db = await createDatabase();
  });
  afterEach(async () => {
    await db.drop();
  });

  it('overlapping players: one row each, the counts exact, every insert counted by the writer that made it', async () => {
    const [a, b] = await Promise.all([openPostgresExposureWriter(db.url), openPostgresExposureWriter(db.url)]);
    try {
      const players = 4000;
      // Each writer sees every player (as two nodes behind a balancer would), in its own order and
      // with its own clock; batches of 1,000 written concurrently.
      const batchesOf = (order: number[], at: number): ExposureRow[][] => {
        const out: ExposureRow[][] = [];
        for (let i = 0; i < order.length; i += 1000) {
          out.push(order.slice(i, i + 1000).flatMap((p) => [row('Shop:price', `u${p}`, p % 2 === 0 ? 'A' : 'B', at + p), row('Bonus:vip', `u${p}`, 'on', at + p)]));
        }
        return out;
      };
      const forward = Array.from({ length: players }, (_, i) => i);
      const backward = forward.slice().reverse();
      const run = async (w: ExposureWriter, batches: ExposureRow[][]): Promise<number> => {
        let n = 0;
        for (const batch of batches) n += (await w.write(batch)).inserted;
        return n;
      };
      const [na, nb] = await Promise.all([run(a, batchesOf(forward, T0)), run(b, batchesOf(backward, T0 + 10))]);
      expect(na + nb).toBe(players * 2);
      const t = await readPostgres(db.url);
      expect(t.rows).toHaveLength(players * 2);
      expect(playersByVariant(t)).toEqual({ 'Shop:price/A': players / 2, 'Shop:price/B': players / 2, 'Bonus:vip/on': players });
      expect(playersByVariant(t)).toEqual(rowsByVariant(t));
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('a row PostgreSQL cannot hold (a NUL in u) fails its batch without writing any of it', async () => {
    const w = await openPostgresExposureWriter(db.url);
    try {
      await expect(w.write([row('X', 'ok', 'A', T0), row('X', 'bad\u0000player', 'A', T0)])).rejects.toMatchObject({ code: expect.stringMatching(/^22/) as unknown });
      const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
      try {
        expect((await sql.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM rcd_exposures'))[0]!.n).toBe(0);
      } finally {
        await sql.end();
      }
    } finally {
      await w.close();
    }
  });
});

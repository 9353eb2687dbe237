/**
 * Exact exposure counts on a real server, in SQLite and in PostgreSQL (docs/experiments.md,
 * "Exactness"): 3,000 distinct players sent over many connections at once through four endpoints,
 * a sixth of them again, to a server with two delivery loops (each its own repeat filter), give
 * exactly 3,000 rows; each player's row holds the variant its answers named in meta.seg, the
 * per-hour counts sum to the same split, and the readout reports it with the chi-square of that
 * split against the configured shares.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase } from '../helpers/postgres.js';
import { chiSquare, experimentsOf, inParallel, metricTotal, perVariant, readExposures, releasedAfterAll, variantOf } from '../helpers/exposures.js';
import { until } from '../helpers/until.js';

const KEY = 'exposures-counts-key';
const ENV = 'launch';
const EXPERIMENT = 'Pricing:tier';
const SHARES = { A: 0.2, B: 0.4, C: 0.4 };
const BUNDLE = {
  environments: {
    [ENV]: {
      keys: [KEY],
      content: {
        Pricing: {
          json: { tier: 'base' },
          mapping: {
            rules: [
              {
                segment: 'tier',
                variants: [
                  { name: 'A', mod: [0, 199], patch: { tier: 'a' } },
                  { name: 'B', mod: [200, 599], patch: { tier: 'b' } },
                  { name: 'C', mod: [600, 999], patch: { tier: 'c' } },
                ],
              },
            ],
          },
        },
      },
    },
  },
};
const PLAYERS = 3000;
const REPEATS = 500;
const WORKERS = 16;

const { running, cleanups } = releasedAfterAll();

interface Seg {
  readonly n: string;
  readonly v: string | null;
}

/** Asks for Pricing as player `u` through one of four endpoints; answers the variant meta.seg named. */
async function variantFor(srv: ServerProcess, u: string, endpoint: number): Promise<string> {
  const body = { u, p: { n: endpoint } };
  let seg: readonly Seg[] | undefined;
  switch (endpoint % 4) {
    case 0:
      seg = ((await call(srv.url, '/api/v1/config/Pricing/dynamic', { key: KEY, body: JSON.stringify(body) })).json as { meta?: { seg: Seg[] } }).meta?.seg;
      break;
    case 1:
      seg = ((await call(srv.url, '/api/v1/config/Pricing/dynamic?responseType=serialized', { key: KEY, body: JSON.stringify(body) })).json as { meta?: { seg: Seg[] } }).meta?.seg;
      break;
    case 2: {
      const flag = (await call(srv.url, '/ofrep/v1/evaluate/flags/Pricing', { key: KEY, body: JSON.stringify({ context: { targetingKey: u } }) })).json as { metadata?: { seg?: string } };
      seg = flag.metadata?.seg === undefined ? undefined : (JSON.parse(flag.metadata.seg) as Seg[]);
      break;
    }
    default: {
      const path = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Pricing'])) + '&dynamic=true';
      seg = ((await call(srv.url, path, { key: KEY, body: JSON.stringify(body) })).json as { Pricing?: { meta: { seg: Seg[] } } }).Pricing?.meta.seg;
    }
  }
  const v = variantOf(seg, 'tier');
  if (v === null) throw new Error(`no variant for ${JSON.stringify(u)} through endpoint ${endpoint % 4}: ${JSON.stringify(seg)}`);
  return v;
}

/** Runs the whole case against the exposure database `exposuresIn(dir)` names (dir: the server's data directory). */
async function exactCounts(exposuresIn: (dir: string) => string): Promise<void> {
  const dir = tempDir();
  const exposures = exposuresIn(dir);
  const srv = await startServer({ dir, admin: true, metrics: true, bundle: BUNDLE, args: ['--exposures', exposures, '--http-threads', '2'] });
  running.push(srv);
  // Players whose ids are unicode, one of them the empty string.
  const players = Array.from({ length: PLAYERS }, (_, i) => (i === 0 ? '' : `玩家-${i}-ü`));
  const sent = new Map<string, string>();
  await inParallel(PLAYERS, WORKERS, async (i) => {
    sent.set(players[i]!, await variantFor(srv, players[i]!, i));
  });
  // A sixth again, through another endpoint: sticky, and no second row.
  const unsticky: string[] = [];
  await inParallel(REPEATS, WORKERS, async (j) => {
    const u = players[(j * 6) % PLAYERS]!;
    if ((await variantFor(srv, u, j + 1)) !== sent.get(u)) unsticky.push(u);
  });
  expect(unsticky).toEqual([]);

  await until(`${PLAYERS} rows`, async () => (await readExposures(exposures)).rows.length >= PLAYERS, 20_000, 100);
  await new Promise((r) => setTimeout(r, 500));
  const rec = await readExposures(exposures);
  expect(rec.rows.length).toBe(PLAYERS);
  const wrong = rec.rows.filter((r) => r.environment !== ENV || r.experiment !== EXPERIMENT || sent.get(r.player) !== r.variant || r.movedTo !== null);
  expect(wrong).toEqual([]);
  expect(new Set(rec.rows.map((r) => r.player)).size).toBe(PLAYERS);

  const split: Record<string, number> = {};
  for (const v of sent.values()) split[v] = (split[v] ?? 0) + 1;
  const table = perVariant(rec, ENV, EXPERIMENT);
  expect(table.rows).toEqual(split);
  expect(table.counts).toEqual(split);
  expect(await metricTotal(srv.metricsUrl!, 'rcd_exposure_rows_written_total')).toBe(PLAYERS);

  const readout = (await experimentsOf(srv.adminUrl!, ENV)).experiments.find((e) => e.name === EXPERIMENT)!;
  expect(readout.players).toBe(PLAYERS);
  expect(readout.variants.map((v) => [v.name, v.share, v.players])).toEqual(Object.entries(SHARES).map(([name, share]) => [name, share, split[name] ?? 0]));
  const chi = chiSquare(readout.variants.map((v) => v.players), Object.values(SHARES));
  expect(readout.srm?.chiSquare).toBeCloseTo(chi, 6);
  expect(readout.srm?.mismatch).toBe(readout.srm!.pValue < 0.001);
  expect(readout.firstExposure).not.toBeNull();
  expect(Date.parse(readout.lastExposure!)).toBeGreaterThanOrEqual(Date.parse(readout.firstExposure!));
}

describe('exact exposure counts', () => {
  it('SQLite: 3,000 players over many connections are 3,000 rows, split as meta.seg said', async () => {
    await exactCounts((dir) => `sqlite:${join(dir, 'exposures.db')}`);
  }, 90_000);

  it('PostgreSQL: the same, exactly', async () => {
    const db = await createDatabase();
    cleanups.push(db.drop);
    await exactCounts(() => db.url);
  }, 90_000);
});

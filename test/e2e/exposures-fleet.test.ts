/**
 * Exposures in PostgreSQL when it matters most (docs/experiments.md, "Outages" and "Fleet"):
 * - the exposure database stopped for a few seconds under delivery load, on a PostgreSQL server of
 *   this test's own (stopped and started for real): every request is answered, the small writer
 *   queue overflows and rcd_exposures_dropped_total says exactly what was lost (rows + dropped =
 *   players sent), and writing resumes by itself once the database is back;
 * - a fleet of three nodes on one PostgreSQL database (the store and the exposure table): the same
 *   player answered by every node, at the same moment, is one row.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../helpers/postgres.js';
import { experimentsOf, inParallel, metricTotal, perVariant, readExposures, variantOf } from '../helpers/exposures.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const MAPPING = { rules: [{ segment: 'mode', variants: [{ name: 'A', mod: [0, 499], patch: { mode: 'a' } }, { name: 'B', mod: [500, 999], patch: { mode: 'b' } }] }] };

const running: ServerProcess[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Seg {
  readonly n: string;
  readonly v: string | null;
}

/** The variant of Arena for `u` through the wrapped endpoint, or why there is none. */
async function wrappedVariant(srv: ServerProcess, key: string, u: string): Promise<{ variant: string | null; problem: string | null }> {
  try {
    const r = await call(srv.url, '/api/v1/config/Arena/dynamic', { key, body: JSON.stringify({ u }) });
    const variant = variantOf((r.json as { meta?: { seg: Seg[] } }).meta?.seg, 'mode');
    return r.status === 200 && variant !== null ? { variant, problem: null } : { variant: null, problem: `${u}: ${r.status} ${r.text.slice(0, 120)}` };
  } catch (err) {
    return { variant: null, problem: `${u}: ${(err as Error).message}` };
  }
}

/** `until`, failing with what the server recorded and said: rows, the writer's counters, its output's end. */
async function waitFor(what: string, srv: ServerProcess, exposures: string, cond: () => Promise<boolean>, ms: number): Promise<void> {
  try {
    await until(what, cond, ms, 100);
  } catch (err) {
    const rows = (await readExposures(exposures).catch(() => ({ rows: [] }))).rows.length;
    const counters = [];
    for (const name of ['rcd_exposures_total', 'rcd_exposures_dropped_total', 'rcd_exposure_rows_written_total', 'rcd_exposure_write_failures_total', 'rcd_exposure_queue_rows']) {
      counters.push(`${name} ${srv.metricsUrl === null ? '?' : await metricTotal(srv.metricsUrl, name)}`);
    }
    throw new Error(`${(err as Error).message}: ${rows} rows; ${counters.join(', ')}; the server's output ends:\n${srv.stdout().slice(-2000)}\n${srv.stderr().slice(-2000)}`, { cause: err });
  }
}

describe('the exposure database stopped under delivery load', () => {
  it('delivery answers every request, the drop counter says what was lost, writing resumes', async () => {
    const pg: RunningPostgres = await startPostgres();
    cleanups.push(() => pg.destroy());
    const exposures = (await createDatabase(pg.url)).url;
    const KEY = 'exposures-outage-key';
    const bundle = { environments: { live: { keys: [KEY], content: { Arena: { json: { mode: 'classic' }, mapping: MAPPING } } } } };
    // The store is SQLite: only the exposure database goes away. The writer's queue holds what the
    // writer has in hand while the database answers (a few batches of 50 ms), not an outage of 3 s.
    const srv = await startServer({ admin: true, metrics: true, bundle, args: ['--exposures', exposures, '--exposure-queue', '500'] });
    running.push(srv);

    const problems: string[] = [];
    let sent = 0;
    const ask = async (u: string): Promise<void> => {
      sent++;
      const r = await wrappedVariant(srv, KEY, u);
      if (r.problem !== null) problems.push(r.problem);
    };
    // Before: every player written.
    await inParallel(200, 8, (i) => ask(`before-${i}`));
    await waitFor('the first 200 rows', srv, exposures, async () => (await readExposures(exposures)).rows.length === 200, 10_000);
    expect(await metricTotal(srv.metricsUrl!, 'rcd_exposures_dropped_total')).toBe(0);

    // Load: a new player every request, while the database stops for 3 s and starts again.
    let stopping = false;
    let n = 0;
    const load = Promise.all(
      Array.from({ length: 8 }, async () => {
        while (!stopping) await ask(`during-${n++}`);
      }),
    );
    await new Promise((r) => setTimeout(r, 300));
    await pg.stop();
    const sentAtStop = sent;
    await new Promise((r) => setTimeout(r, 3000));
    const sentWhileDown = sent - sentAtStop;
    await pg.start();
    await new Promise((r) => setTimeout(r, 1000));
    stopping = true;
    await load;
    expect(problems).toEqual([]);
    expect(sentWhileDown).toBeGreaterThan(200);
    expect(srv.child.exitCode).toBeNull();

    // Once the writer caught up: every player sent is either a row or counted as dropped.
    const accounted = async (): Promise<{ rows: number; dropped: number }> => ({
      rows: (await readExposures(exposures)).rows.length,
      dropped: await metricTotal(srv.metricsUrl!, 'rcd_exposures_dropped_total'),
    });
    await waitFor('rows + dropped to account for every player', srv, exposures, async () => {
      const a = await accounted();
      return a.rows + a.dropped >= sent;
    }, 20_000);
    await new Promise((r) => setTimeout(r, 500));
    const after = await accounted();
    expect(after.rows + after.dropped).toBe(sent);
    expect(after.dropped).toBeGreaterThan(0);
    expect(after.rows).toBeGreaterThan(200);
    expect(await metricTotal(srv.metricsUrl!, 'rcd_exposure_write_failures_total')).toBeGreaterThan(0);

    // Writing goes on: new players appear, none dropped now.
    const fresh = Array.from({ length: 100 }, (_, i) => `after-${i}`);
    await inParallel(fresh.length, 8, (i) => ask(fresh[i]!));
    expect(problems).toEqual([]);
    await waitFor('the players sent after the restart', srv, exposures, async () => {
      const players = new Set((await readExposures(exposures)).rows.map((r) => r.player));
      return fresh.every((u) => players.has(u));
    }, 10_000);
    expect(await metricTotal(srv.metricsUrl!, 'rcd_exposures_dropped_total')).toBe(after.dropped);
    const rec = await readExposures(exposures);
    expect(perVariant(rec, 'live', 'Arena:mode').counts).toEqual(perVariant(rec, 'live', 'Arena:mode').rows);
  }, 120_000);
});

describe('a fleet of nodes on one PostgreSQL table', () => {
  it('the same player answered by every node at once is one row', async () => {
    const db = await createDatabase();
    cleanups.push(db.drop);
    // One data directory: the nodes share the webhook key file, as docs/fleet.md asks. The store
    // and the exposure table are in one database.
    const dir = tempDir();
    const nodes: ServerProcess[] = [];
    for (let i = 0; i < 3; i++) {
      const node = await startServer({ dir, admin: true, store: db.url, args: ['--exposures', db.url] });
      running.push(node);
      nodes.push(node);
    }
    const adm = async (method: string, path: string, body?: string): Promise<unknown> => {
      const res = await fetch(`${nodes[0]!.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
      const json: unknown = await res.json();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    await adm('PUT', 'environments/fleet');
    const key = ((await adm('POST', 'environments/fleet/keys')) as { key: string }).key;
    await adm('PUT', 'environments/fleet/content/Arena', '{"mode":"classic"}');
    await adm('PUT', 'environments/fleet/content/Arena/mapping', JSON.stringify(MAPPING));

    // 200 players each sent to all three nodes at once; 50 more to one node each.
    const variants = new Map<string, string>();
    const problems: string[] = [];
    const note = (u: string, r: { variant: string | null; problem: string | null }): void => {
      if (r.problem !== null) problems.push(r.problem);
      else if (variants.has(u) && variants.get(u) !== r.variant) problems.push(`${u}: ${variants.get(u)} and ${r.variant}`);
      else variants.set(u, r.variant!);
    };
    await inParallel(200, 6, async (i) => {
      const u = `everywhere-${i}`;
      for (const r of await Promise.all(nodes.map((node) => wrappedVariant(node, key, u)))) note(u, r);
    });
    await inParallel(150, 6, async (i) => {
      const u = `node${i % 3}-${i}`;
      note(u, await wrappedVariant(nodes[i % 3]!, key, u));
    });
    expect(problems).toEqual([]);
    expect(variants.size).toBe(350);

    await until('350 rows', async () => (await readExposures(db.url)).rows.length >= 350, 20_000, 100);
    await new Promise((r) => setTimeout(r, 500));
    const rec = await readExposures(db.url);
    expect(rec.rows.length).toBe(350);
    expect(rec.rows.filter((r) => variants.get(r.player) !== r.variant || r.movedTo !== null)).toEqual([]);
    const split: Record<string, number> = {};
    for (const v of variants.values()) split[v] = (split[v] ?? 0) + 1;
    expect(perVariant(rec, 'fleet', 'Arena:mode')).toEqual({ rows: split, counts: split });
    // Every node reads the same shared table.
    for (const node of nodes) {
      const e = (await experimentsOf(node.adminUrl!, 'fleet')).experiments.find((x) => x.name === 'Arena:mode')!;
      expect(Object.fromEntries(e.variants.map((v) => [v.name, v.players]))).toEqual(split);
    }
  }, 120_000);
});

/**
 * Experiment exposures on a real server (docs/experiments.md), recorded in SQLite: every answer
 * that applies a variant writes its player's row (the wrapped endpoint with and without
 * responseType, the dynamic combine also when a plan answers it, OFREP single and bulk, a 304), and none
 * of the content-only endpoint, the plain combine or an error; a row holds u exactly as sent, the
 * variant meta.seg named, v and the dimensions of --exposure-dimensions. The first exposure wins: a
 * player moved to another variant by an edit keeps variant and first_seen and gets moved_to. Without
 * --exposures nothing is recorded and the readout says recording:false; a SQLite exposure file that
 * is the config store's own is refused at the start.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, errorCode, serveUntilExit, startServer, tempDir, type Reply, type ServerProcess } from '../helpers/server-process.js';
import { experimentOf, experimentsOf, metricTotal, perVariant, playersIn, readExposures, variantOf, type ExposureRecord, type Recorded } from '../helpers/exposures.js';
import { until } from '../helpers/until.js';

const KEY = 'exposures-key-1';
const OTHER_KEY = 'exposures-key-2';
const MOVES_KEY = 'exposures-key-3';
const AUTH = { authorization: 'Bearer test-admin-token' };

const THEME = { segment: 'theme', variants: [{ name: 'A', mod: [0, 499], patch: { theme: 'dark' } }, { name: 'B', mod: [500, 999], patch: { theme: 'blue' } }] };
const PRICE = {
  segment: 'price',
  experiment: 'price-test',
  variants: [
    { name: 'low', mod: [0, 332], patch: { price: 5 } },
    { name: 'mid', mod: [333, 665], patch: { price: 10 } },
    { name: 'high', mod: [666, 999], patch: { price: 15 } },
  ],
};
const COLOR = (a: [number, number], b: [number, number]): unknown => ({ rules: [{ segment: 'color', variants: [{ name: 'A', mod: a, patch: { color: 'red' } }, { name: 'B', mod: b, patch: { color: 'blue' } }] }] });

const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        // A patch rule before the A/B rule: it applies no variant and is no experiment.
        Game: { json: { theme: 'light', vip: false }, mapping: { rules: [{ segment: 'vip', when: { tier: 'gold' }, patch: { vip: true } }, THEME] } },
        Shop: { json: { price: 10 }, mapping: { rules: [PRICE] } },
        // One variant over every group: an experiment without a split.
        Solo: { json: { x: 1 }, mapping: { rules: [{ segment: 'solo', variants: [{ name: 'on', mod: [0, 999], patch: { x: 2 } }] }] } },
        Plain: { json: { plain: true } },
      },
    },
    other: { keys: [OTHER_KEY], content: { Empty: { json: { e: 0 }, mapping: { rules: [{ segment: 'ab', variants: [{ name: 'A', mod: [0, 499], patch: { e: 1 } }, { name: 'B', mod: [500, 999], patch: { e: 2 } }] }] } } } },
    moves: { keys: [MOVES_KEY], content: { Move: { json: { color: 'grey' }, mapping: COLOR([0, 499], [500, 999]) } } },
  },
};
const DIMENSIONS = ['--exposure-dimensions', 'country,platform'];

const dir = tempDir();
const exposuresUrl = `sqlite:${join(dir, 'exposures.db')}`;
let srv: ServerProcess;
let off: ServerProcess;

beforeAll(async () => {
  [srv, off] = await Promise.all([
    startServer({ dir, admin: true, metrics: true, bundle: BUNDLE, args: ['--exposures', exposuresUrl, '--http-threads', '2', ...DIMENSIONS] }),
    startServer({ admin: true, metrics: true, bundle: BUNDLE, args: DIMENSIONS }),
  ]);
}, 60_000);
afterAll(async () => {
  await srv?.dispose();
  await off?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

interface Seg {
  readonly n: string;
  readonly v: string | null;
}
interface Wrapped {
  readonly meta: { readonly seg: readonly Seg[] };
}

async function ok(r: Promise<Reply>): Promise<Reply> {
  const reply = await r;
  expect(reply.status, reply.text).toBe(200);
  return reply;
}

function post(base: string, path: string, body: unknown, key = KEY): Promise<Reply> {
  return call(base, path, { key, body: JSON.stringify(body) });
}

function ofrepSeg(flag: { metadata?: { seg?: string } } | undefined): readonly Seg[] {
  return JSON.parse(flag?.metadata?.seg ?? '[]') as Seg[];
}

/** A row as the test expects it: what it can know before the server wrote it. */
interface Expected {
  environment: string;
  experiment: string;
  player: string;
  variant: string;
  appVersion: string | null;
  dimensions: Record<string, unknown>;
}

function expectedOf(r: ExposureRecord): Expected {
  return { environment: r.environment, experiment: r.experiment, player: r.player, variant: r.variant, appVersion: r.appVersion, dimensions: r.dimensions };
}

/** One order for rows read back and rows expected (JavaScript's string order on each key part). */
function byKey(a: Expected, b: Expected): number {
  const ka = [a.environment, a.experiment, a.player];
  const kb = [b.environment, b.experiment, b.player];
  for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return ka[i]! < kb[i]! ? -1 : 1;
  return 0;
}

/** Waits until the table holds `n` rows (more fails at once), then a while longer for any row that should not be there. */
async function settled(n: number): Promise<Recorded> {
  await until(`${n} exposure rows`, async () => (await readExposures(exposuresUrl)).rows.length >= n, 15_000, 50);
  await new Promise((r) => setTimeout(r, 400));
  return readExposures(exposuresUrl);
}

describe('exposures from every endpoint that applies a variant', () => {
  it('writes one row per player and experiment, u as sent, the variant of meta.seg, v and the named dimensions', async () => {
    const startedAt = Date.now();
    // Answers that apply no variant, or no answer at all: nothing is recorded for them.
    await ok(post(srv.url, '/api/v1/config/Game', { u: 'none-content', p: { tier: 'gold' } }));
    await ok(post(srv.url, '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Game', 'Shop'])), { u: 'none-plain-combine' }));
    expect((await post(srv.url, '/api/v1/config/Game/dynamic', { u: 'none-bad-v', v: 'abc' })).status).toBe(400);
    const noKey = await post(srv.url, '/ofrep/v1/evaluate/flags/Game', { context: { country: 'DE' } });
    expect(noKey.status).toBe(400);
    const noKeyBulk = (await ok(post(srv.url, '/ofrep/v1/evaluate/flags', { context: { country: 'DE' } }))).json as { flags: { key: string; errorCode?: string }[] };
    expect(noKeyBulk.flags.filter((f) => f.errorCode === 'TARGETING_KEY_MISSING').map((f) => f.key)).toEqual(['Game', 'Shop', 'Solo']);
    expect(errorCode(await post(srv.url, '/api/v1/config/Nope/dynamic', { u: 'none-missing' }))).toBe('content_not_found');

    const expected: Expected[] = [];
    const expect1 = (environment: string, experiment: string, player: string, seg: readonly Seg[], segment: string, appVersion: string | null, dimensions: Record<string, unknown>): void => {
      const variant = variantOf(seg, segment);
      expect(variant, `${player} ${segment}`).not.toBeNull();
      expected.push({ environment, experiment, player, variant: variant!, appVersion, dimensions });
    };

    // Wrapped: unicode u, v, both dimensions (tier is not one); the patch rule before it is no experiment.
    const wd = { u: '玩家🎮-1', p: { country: 'DE', platform: 'ios', tier: 'gold' }, v: '1.2.3' };
    const wdSeg = ((await ok(post(srv.url, '/api/v1/config/Game/dynamic', wd))).json as Wrapped).meta.seg;
    expect(wdSeg.map((s) => s.n)).toEqual(['vip', 'theme']);
    expect1('live', 'Game:theme', wd.u, wdSeg, 'theme', '1.2.3', { country: 'DE', platform: 'ios' });
    // The same player again, on either loop: still one row.
    for (let i = 0; i < 4; i++) await ok(post(srv.url, '/api/v1/config/Game/dynamic', wd));

    // Serialized, the id in another case (the experiment is named by the id as stored); an over-long
    // string dimension is cut to 128 characters, a number kept as JSON.
    const ws = { u: 'joueur-é', p: { country: 'x'.repeat(300), platform: 7, other: 'not a dimension' } };
    const wsReply = (await ok(post(srv.url, '/api/v1/config/game/dynamic?responseType=serialized', ws))).json as Wrapped & { data: unknown };
    expect(typeof wsReply.data).toBe('string');
    expect1('live', 'Game:theme', ws.u, wsReply.meta.seg, 'theme', null, { country: 'x'.repeat(128), platform: 7 });
    // An object dimension is left out, a boolean kept; the explicit experiment name.
    const shop = { u: 'shop-1', p: { country: { nested: 1 }, platform: true }, v: '0.0.1' };
    expect1('live', 'price-test', shop.u, ((await ok(post(srv.url, '/api/v1/config/Shop/dynamic', shop))).json as Wrapped).meta.seg, 'price', '0.0.1', { platform: true });

    // Dynamic combine, wrapped and serialized: the first request of a query builds its plan, the
    // next players (same query, same v) are answered from it; every one is recorded.
    for (const [kind, suffix] of [
      ['cw', '&dynamic=true'],
      ['cs', '&dynamic=true&responseType=serialized'],
    ] as const) {
      const path = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Game', 'Shop', 'Plain'])) + suffix;
      for (let i = 0; i < 6; i++) {
        const body = { u: `${kind}-${i}`, p: { platform: 'android', country: null }, v: '2.0.0' };
        const answer = (await ok(post(srv.url, path, body))).json as Record<string, Wrapped>;
        expect1('live', 'Game:theme', body.u, answer.Game!.meta.seg, 'theme', '2.0.0', { platform: 'android' });
        expect1('live', 'price-test', body.u, answer.Shop!.meta.seg, 'price', '2.0.0', { platform: 'android' });
        expect(answer.Plain!.meta.seg).toEqual([]);
      }
    }

    // OFREP single flag: targetingKey is u, appVersion is v, the other attributes are p.
    const single = (await ok(post(srv.url, '/ofrep/v1/evaluate/flags/shop', { context: { targetingKey: 'of-1', country: 'FR', appVersion: '3.1.4' } }))).json as { metadata?: { seg?: string } };
    expect1('live', 'price-test', 'of-1', ofrepSeg(single), 'price', '3.1.4', { country: 'FR' });
    // OFREP bulk: every item of the environment, each experiment once.
    const bulk = (await ok(post(srv.url, '/ofrep/v1/evaluate/flags', { context: { targetingKey: 'ob-1', platform: 'web' } }))).json as { flags: { key: string; metadata?: { seg?: string } }[] };
    const flag = (key: string): { metadata?: { seg?: string } } | undefined => bulk.flags.find((f) => f.key === key);
    expect1('live', 'Game:theme', 'ob-1', ofrepSeg(flag('Game')), 'theme', null, { platform: 'web' });
    expect1('live', 'price-test', 'ob-1', ofrepSeg(flag('Shop')), 'price', null, { platform: 'web' });
    expect1('live', 'Solo:solo', 'ob-1', ofrepSeg(flag('Solo')), 'solo', null, { platform: 'web' });

    // The empty u, sent or left out, and an OFREP "" targeting key: one player "" (another environment).
    const emptySeg = ((await ok(post(srv.url, '/api/v1/config/Empty/dynamic', {}, OTHER_KEY))).json as Wrapped).meta.seg;
    expect(((await ok(post(srv.url, '/api/v1/config/Empty/dynamic', { u: '' }, OTHER_KEY))).json as Wrapped).meta.seg).toEqual(emptySeg);
    await ok(post(srv.url, '/ofrep/v1/evaluate/flags/Empty', { context: { targetingKey: '' } }, OTHER_KEY));
    expect1('other', 'Empty:ab', '', emptySeg, 'ab', null, {});

    // A 304 applied the variant too (the client holds it): a tag from the server without
    // --exposures (the same bundle, so the same tag) revalidated here is this player's first exposure.
    const tagged = { u: 'etag-1', p: { country: 'SE' } };
    const fromOff = await ok(post(off.url, '/api/v1/config/Game/dynamic', tagged));
    const revalidated = await call(srv.url, '/api/v1/config/Game/dynamic', { key: KEY, body: JSON.stringify(tagged), headers: { 'if-none-match': fromOff.headers.get('etag') ?? '' } });
    expect(revalidated.status).toBe(304);
    expect1('live', 'Game:theme', tagged.u, (fromOff.json as Wrapped).meta.seg, 'theme', null, { country: 'SE' });

    const rec = await settled(expected.length);
    const rows = rec.rows.map(expectedOf).sort(byKey);
    expect(rows).toEqual(expected.sort(byKey));
    for (const r of rec.rows) {
      expect(r.firstSeenMs).toBeGreaterThanOrEqual(startedAt - 1000);
      expect(r.firstSeenMs).toBeLessThanOrEqual(Date.now() + 1000);
      expect(r.movedTo).toBeNull();
      expect(r.movedAtMs).toBeNull();
    }
    // The counts table says the same per variant; the writer's metric counts every row.
    for (const [env, name] of [
      ['live', 'Game:theme'],
      ['live', 'price-test'],
      ['live', 'Solo:solo'],
      ['other', 'Empty:ab'],
    ] as const) {
      const split = perVariant(rec, env, name);
      expect(split.counts, name).toEqual(split.rows);
    }
    expect(await metricTotal(srv.metricsUrl!, 'rcd_exposure_rows_written_total')).toBe(expected.length);

    // The readout: the experiments of the environment's mappings, players as in the table.
    const readout = await experimentsOf(srv.adminUrl!, 'live');
    expect(readout.recording).toBe(true);
    expect(readout.experiments.map((e) => e.name)).toEqual(['Game:theme', 'Solo:solo', 'price-test']);
    const price = readout.experiments.find((e) => e.name === 'price-test')!;
    expect(price).toMatchObject({ item: 'Shop', items: ['Shop'], segment: 'price' });
    expect(price.variants.map((v) => [v.name, v.share])).toEqual([
      ['low', 0.333],
      ['mid', 0.333],
      ['high', 0.334],
    ]);
    const priceSplit = perVariant(rec, 'live', 'price-test').rows;
    expect(Object.fromEntries(price.variants.map((v) => [v.name, v.players]).filter(([, n]) => n !== 0))).toEqual(priceSplit);
    expect(price.players).toBe(Object.values(priceSplit).reduce((a, b) => a + b, 0));
    expect(readout.experiments.find((e) => e.name === 'Solo:solo')!.srm).toBeNull();
    const one = await experimentOf(srv.adminUrl!, 'other', 'Empty:ab');
    expect(one.status).toBe(200);
    expect(one.body.players).toBe(1);
    expect((one.body.hours ?? []).reduce((n, h) => n + Object.values(h.variants).reduce((a, b) => a + b, 0), 0)).toBe(1);
    expect((await experimentOf(srv.adminUrl!, 'live', 'no-such-test')).body.error?.code).toBe('experiment_not_found');
  });
});

describe('the first exposure wins', () => {
  it('a player moved to another variant by a range edit keeps variant and first_seen and gets moved_to', async () => {
    const [mover] = playersIn(0, 499, 1, 'mover-');
    const [late] = playersIn(0, 499, 1, 'late-');
    const ask = async (u: string): Promise<string | null> => variantOf(((await ok(post(srv.url, '/api/v1/config/Move/dynamic', { u }, MOVES_KEY))).json as Wrapped).meta.seg, 'color');
    const moveRows = async (): Promise<ExposureRecord[]> => (await readExposures(exposuresUrl)).rows.filter((r) => r.environment === 'moves');

    expect(await ask(mover!)).toBe('A');
    await until('the mover\'s row', async () => (await moveRows()).length === 1, 10_000, 50);
    const first = (await moveRows())[0]!;
    expect(first).toMatchObject({ experiment: 'Move:color', player: mover, variant: 'A', movedTo: null });

    // The ranges swap: the same player is now in B.
    const put = await fetch(`${srv.adminUrl}/admin/v1/environments/moves/content/Move/mapping`, { method: 'PUT', headers: AUTH, body: JSON.stringify(COLOR([500, 999], [0, 499])) });
    expect(put.status, await put.text()).toBe(200);
    for (let i = 0; i < 3; i++) expect(await ask(mover!)).toBe('B');
    expect(await ask(late!)).toBe('B');
    await until('the move recorded and the late player\'s row', async () => {
      const rows = await moveRows();
      return rows.length === 2 && rows.some((r) => r.movedTo !== null);
    }, 10_000, 50);
    await new Promise((r) => setTimeout(r, 300));
    const rows = await moveRows();
    const moved = rows.find((r) => r.player === mover)!;
    expect(moved).toMatchObject({ variant: 'A', firstSeenMs: first.firstSeenMs, movedTo: 'B' });
    expect(moved.movedAtMs).toBeGreaterThanOrEqual(first.firstSeenMs);
    expect(rows.find((r) => r.player === late)).toMatchObject({ variant: 'B', movedTo: null, movedAtMs: null });

    // Counts follow first exposures only: one player in A, one in B; the readout says one moved.
    const rec = await readExposures(exposuresUrl);
    expect(perVariant(rec, 'moves', 'Move:color').counts).toEqual({ A: 1, B: 1 });
    const readout = await experimentOf(srv.adminUrl!, 'moves', 'Move:color');
    expect(readout.body).toMatchObject({ players: 2, moved: 1 });
    expect(await metricTotal(srv.metricsUrl!, 'rcd_exposure_players_moved_total')).toBeGreaterThanOrEqual(1);
  });
});

describe('exposures off (the default)', () => {
  it('writes nothing and the readout says recording:false with the experiments and no players', async () => {
    const wd = (await ok(post(off.url, '/api/v1/config/Game/dynamic', { u: 'off-1', p: { country: 'DE' } }))).json as Wrapped;
    expect(variantOf(wd.meta.seg, 'theme')).not.toBeNull();
    await ok(post(off.url, '/ofrep/v1/evaluate/flags', { context: { targetingKey: 'off-2' } }));
    await ok(post(off.url, '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Game', 'Shop'])) + '&dynamic=true', { u: 'off-3' }));
    await new Promise((r) => setTimeout(r, 300));

    const readout = await experimentsOf(off.adminUrl!, 'live');
    expect(readout.recording).toBe(false);
    expect(readout.experiments.map((e) => e.name)).toEqual(['Game:theme', 'Solo:solo', 'price-test']);
    for (const e of readout.experiments) {
      expect(e.players, e.name).toBe(0);
      expect(e.srm, e.name).toBeNull();
      expect(e.variants.every((v) => v.players === 0), e.name).toBe(true);
    }
    expect((await experimentOf(off.adminUrl!, 'live', 'price-test')).body.players).toBe(0);
    expect(await metricTotal(off.metricsUrl!, 'rcd_exposures_total')).toBe(0);
    expect(await metricTotal(off.metricsUrl!, 'rcd_exposure_rows_written_total')).toBe(0);
    // No database file holds an exposure table: the store is the only one, and it has none.
    const files = readdirSync(off.dir).filter((f) => f.endsWith('.db'));
    expect(files).toEqual(['rcd.db']);
    const store = new Database(join(off.dir, 'rcd.db'), { readonly: true });
    try {
      expect(store.prepare("SELECT name FROM sqlite_master WHERE name LIKE 'rcd_exposure%'").all()).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe('the exposure file', () => {
  it('may not be the config store\'s own file: the start is refused, naming the flag', async () => {
    const own = tempDir();
    try {
      const store = `sqlite:${join(own, 'rcd.db')}`;
      const exit = await serveUntilExit(['--store', store, '--exposures', store, '--port', '0', '--admin', 'false'], own);
      expect(exit.code).not.toBe(0);
      expect(exit.stdout + exit.stderr).toMatch(/--exposures .*store/);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});


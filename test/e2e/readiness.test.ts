/**
 * GET /readyz on the delivery port through a server's life: 503 starting while a bundle is imported
 * (the port is bound before the import), 200 once it serves, 503 draining from SIGTERM while a
 * request is still in flight. 503 store_unavailable once a real PostgreSQL has been stopped for
 * longer than --ready-store-outage is checked by readiness-outage.test.ts (npm run test:slow: a store
 * outage). /healthz stays liveness.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, call, errorCode, readinessOf, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { freePort } from '../helpers/free-port.js';
import { until } from '../helpers/until.js';

const KEY = 'key-ready-1';
const KEY_LATE = 'key-ready-late';
const running: ServerProcess[] = [];

const dirs: string[] = [];

afterAll(async () => {
  for (const s of running.splice(0).reverse()) await s.dispose();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});


/** Sends `text` on a raw connection and resolves with everything read until `done` matches. */
function readUntil(socket: Socket, done: RegExp | ((got: string) => boolean), ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no ${String(done)} within ${ms} ms; got ${JSON.stringify(got)}`)), ms);
    const onData = (d: Buffer): void => {
      got += d.toString('latin1');
      if (typeof done === 'function' ? done(got) : done.test(got)) {
        clearTimeout(timer);
        socket.off('data', onData);
        resolve(got);
      }
    };
    socket.on('data', onData);
  });
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** True once `got` holds one whole HTTP response: its head and Content-Length bytes of body. */
function wholeResponse(got: string): boolean {
  const end = got.indexOf('\r\n\r\n');
  if (end === -1) return false;
  const length = Number(/content-length: (\d+)/i.exec(got.slice(0, end))?.[1] ?? 0);
  return got.length >= end + 4 + length;
}

describe('readiness', () => {
  it('503 starting while the bundle is imported, then 200', async () => {
    const port = await freePort();
    const content: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) content[`item${i}`] = { json: { n: i, pad: 'x'.repeat(40) } };
    const starting = startServer({ bundle: { environments: { prod: { keys: [KEY], content } } }, args: ['--port', String(port)] });
    const seen: string[] = [];
    let srv: ServerProcess | null = null;
    void starting.then((s) => (srv = s));
    const deadline = Date.now() + 60_000;
    // Poll from the moment the port answers until the server printed "listening on".
    while (srv === null && Date.now() < deadline) {
      try {
        const r = await readinessOf(`http://127.0.0.1:${port}`);
        seen.push(r.status === 200 ? 'ready' : (r.code ?? String(r.status)));
      } catch {
        // Not bound yet.
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const s = await starting;
    running.push(s);
    expect(seen).toContain('starting');
    // Never ready before it is, and ready from then on.
    const first = seen.indexOf('ready');
    if (first !== -1) expect(seen.slice(first).every((x) => x === 'ready')).toBe(true);
    expect(seen.filter((x) => x !== 'ready' && x !== 'starting')).toEqual([]);
    expect(await readinessOf(s.url)).toEqual({ status: 200, code: undefined });
    expect((await call(s.url, '/api/v1/config/item7', { key: KEY })).json).toEqual({ n: 7, pad: 'x'.repeat(40) });
  }, 90_000);

  it('answers a key or content the import has not brought in yet with a retryable 503 starting, never 401 or 404', async () => {
    const port = await freePort();
    const content: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) content[`item${i}`] = { json: { n: i, pad: 'x'.repeat(40) } };
    // The store already holds the key and one item: a request for another item finds the key.
    const dir = tempDir();
    dirs.push(dir);
    const seedFile = join(dir, 'seed.json');
    writeFileSync(seedFile, JSON.stringify({ environments: { prod: { keys: [KEY], content: { early: { json: { e: 1 } } } } } }));
    const seeded = spawnSync(process.execPath, [BIN, 'import', seedFile, '--store', `sqlite:${join(dir, 'rcd.db')}`], { encoding: 'utf8' });
    expect(seeded.status, seeded.stderr).toBe(0);
    const starting = startServer({ dir, bundle: { environments: { prod: { keys: [KEY_LATE], content } } }, args: ['--port', String(port)] });
    const seen = new Set<string>();
    let retryAfter: string | null = null;
    let srv: ServerProcess | null = null;
    void starting.then((s) => (srv = s));
    const deadline = Date.now() + 60_000;
    const base = `http://127.0.0.1:${port}`;
    while (srv === null && Date.now() < deadline) {
      for (const [key, id] of [[KEY_LATE, 'early'], [KEY, 'item7'], [KEY, 'early']] as const) {
        try {
          const r = await call(base, `/api/v1/config/${id}`, { key });
          const what = r.status === 200 ? 'ok' : `${r.status} ${errorCode(r)}`;
          seen.add(what);
          if (r.status === 503) retryAfter = r.headers.get('retry-after');
        } catch {
          // Not bound yet.
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const s = await starting;
    running.push(s);
    // The import's key and content answered "starting" (retry), the stored item was served all along.
    expect([...seen].sort()).toEqual(['503 starting', 'ok']);
    expect(retryAfter).toBe('1');
    expect((await call(s.url, '/api/v1/config/item7', { key: KEY_LATE })).json).toEqual({ n: 7, pad: 'x'.repeat(40) });
    // Once started, an unknown key or content is a plain 401 / 404 again.
    expect(errorCode(await call(s.url, '/api/v1/config/item7', { key: 'key-never-made' }))).toBe('invalid_api_key');
    expect(errorCode(await call(s.url, '/api/v1/config/nothing', { key: KEY }))).toBe('content_not_found');
  }, 90_000);

  it('503 draining from SIGTERM while a request is still in flight; the request is still answered', async () => {
    const srv = await startServer({ bundle: { environments: { prod: { keys: [KEY], content: { Shop: { json: { a: 1 } } } } } }, args: ['--shutdown-timeout', '20000'] });
    running.push(srv);
    const port = Number(new URL(srv.url).port);
    expect(await readinessOf(srv.url)).toEqual({ status: 200, code: undefined });
    // A request whose body is half sent: in flight until the rest arrives.
    const body = '{"u":"p1","p":{},"v":"1.0.0"}';
    const slow = await open(port);
    slow.write(`POST /api/v1/config/Shop HTTP/1.1\r\nHost: x\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`);
    // A keep-alive connection opened before the signal, to ask /readyz during the drain.
    const probe = await open(port);
    probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await readUntil(probe, /\r\n\r\n\{[^}]*\}/, 10_000)).toMatch(/^HTTP\/1\.1 200 /);
    await new Promise((r) => setTimeout(r, 300));
    srv.child.kill('SIGTERM');
    let drained = '';
    await until(
      '/readyz to answer draining',
      async () => {
        probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
        drained = await readUntil(probe, wholeResponse, 10_000);
        return drained.startsWith('HTTP/1.1 503 ');
      },
      10_000,
    );
    expect(drained).toContain('"code":"draining"');
    expect(drained.toLowerCase()).toContain('connection: close');
    probe.destroy();
    // The request in flight is still answered.
    slow.write(body.slice(5));
    const answer = await readUntil(slow, /\r\n\r\n\{"a":1\}/, 10_000);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    slow.destroy();
    // The signal already sent is the stop: a second SIGTERM would end the process at once.
    const code = srv.child.exitCode ?? (await new Promise<number | null>((resolve) => srv.child.once('exit', (c) => resolve(c))));
    expect(code).toBe(0);
  }, 60_000);
});

/**
 * Several delivery loops (--http-threads) in one process on one port: the kernel spreads connections
 * over every loop; an admin write answers only once every loop serves it; a second server cannot
 * take the port; SIGTERM stops accepting, drains every loop and exits 0; a crashed loop stops the
 * whole process with a non-zero code (never a server quietly serving on fewer loops).
 */
import { connect, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { field, parseAnswer, type Answer } from '../helpers/answers.js';
import { rmSync } from 'node:fs';
import { call, serveUntilExit as serveToExit, startServer, tempDir, type Exit, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const LOOPS = ['--threads', '2', '--http-threads', '2'];
const KEY = 'loops-key-1';
const BUNDLE = {
  environments: {
    env: {
      keys: [KEY],
      content: {
        Big: { json: { blob: 'x'.repeat(200_000) }, mapping: { rules: [{ segment: 's', patch: { a: 2 } }] } },
        Fine: { json: { ok: true } },
      },
    },
  },
};

const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.dispose();
});

/**
 * The server of two loops with BUNDLE and the admin API that the tests share which only read, write
 * in an environment of their own, or hold its port; a test that stops the process starts its own.
 */
let shared: ServerProcess;
beforeAll(async () => {
  shared = await startServer({ bundle: BUNDLE, admin: true, args: LOOPS });
});
afterAll(async () => {
  await shared?.dispose();
});

async function start(opts: Parameters<typeof startServer>[0] = {}): Promise<ServerProcess> {
  const s = await startServer({ ...opts, args: [...LOOPS, ...(opts.args ?? [])] });
  servers.push(s);
  return s;
}

/** One keep-alive HTTP/1.1 connection: requests one at a time, answers framed by Content-Length. */
class Connection {
  private readonly socket: Socket;
  private buffer = Buffer.alloc(0);
  private waiting: ((r: { status: number; body: string }) => void) | null = null;

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.on('data', (d: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.tryAnswer();
    });
  }

  static open(url: string): Promise<Connection> {
    const { hostname, port } = new URL(url);
    return new Promise((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => resolve(new Connection(socket)));
      socket.once('error', reject);
    });
  }

  request(method: string, path: string, headers: Record<string, string> = {}, body = ''): Promise<{ status: number; body: string }> {
    return this.begin(method, path, headers, body, body.length);
  }

  /** Sends the head and the first `sent` characters of the body; the answer comes once `more` sent the rest. */
  begin(method: string, path: string, headers: Record<string, string>, body: string, sent: number): Promise<{ status: number; body: string }> {
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: loops', 'Content-Type: application/json', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    if (method === 'POST') lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(lines.join('\r\n') + '\r\n\r\n' + body.slice(0, sent));
    });
  }

  more(rest: string): void {
    this.socket.write(rest);
  }

  close(): void {
    this.socket.destroy();
  }

  private tryAnswer(): void {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0 || this.waiting === null) return;
    const head = this.buffer.subarray(0, end).toString('latin1');
    const framed = /transfer-encoding: *chunked/i.test(head) ? dechunk(this.buffer, end + 4) : byLength(this.buffer, end + 4, head);
    if (framed === null) return;
    this.buffer = this.buffer.subarray(framed.next);
    const waiting = this.waiting;
    this.waiting = null;
    waiting({ status: Number(head.slice(9, 12)), body: framed.body });
  }
}

function byLength(buffer: Buffer, start: number, head: string): { body: string; next: number } | null {
  const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? '0');
  if (buffer.length < start + length) return null;
  return { body: buffer.subarray(start, start + length).toString('utf8'), next: start + length };
}

/** A chunked body (uWS sends one when an answer is written in parts), or null until all of it arrived. */
function dechunk(buffer: Buffer, start: number): { body: string; next: number } | null {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = buffer.indexOf('\r\n', at);
    if (lineEnd < 0) return null;
    const size = parseInt(buffer.subarray(at, lineEnd).toString('latin1'), 16);
    if (buffer.length < lineEnd + 2 + size + 2) return null;
    if (size === 0) return { body: Buffer.concat(parts).toString('utf8'), next: lineEnd + 4 };
    parts.push(buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

/** Which loop answered /healthz on this connection. */
async function loopOf(c: Connection): Promise<number> {
  const r = await c.request('GET', '/healthz');
  return (JSON.parse(r.body) as { loop: number }).loop;
}

/** One keep-alive connection on each loop (fresh connections until the kernel put one on each). */
async function connectionPerLoop(url: string, loops: number): Promise<Connection[]> {
  const found = new Map<number, Connection>();
  for (let i = 0; i < 200 && found.size < loops; i++) {
    const c = await Connection.open(url);
    const loop = await loopOf(c);
    if (found.has(loop)) c.close();
    else found.set(loop, c);
  }
  expect([...found.keys()].sort()).toEqual(Array.from({ length: loops }, (_, i) => i));
  return [...found.values()];
}

async function admin(srv: ServerProcess, method: string, path: string, body?: string): Promise<Answer> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  const json = parseAnswer(await res.text());
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

describe('connections on one port', () => {
  it('land on every loop, and every loop serves the same directory', async () => {
    const srv = shared;
    const seen = new Map<number, number>();
    const seqs = new Set<number>();
    // 40 fresh connections: the kernel hashes each to one of the listeners (all on one loop: 2^-39).
    for (let i = 0; i < 40; i++) {
      const r = await call(srv.url, '/healthz', { method: 'GET', key: null, contentType: null, headers: { connection: 'close' } });
      const body = r.json as { status: string; seq: number; loop: number };
      expect(body.status).toBe('ok');
      seen.set(body.loop, (seen.get(body.loop) ?? 0) + 1);
      seqs.add(body.seq);
    }
    expect([...seen.keys()].sort()).toEqual([0, 1]);
    expect(seqs.size).toBe(1);
    expect(srv.stdout()).toContain('2 delivery loops, 2 worker threads');
  });

  it('content is served from every loop (each renders its misses on its own pool share)', async () => {
    const srv = shared;
    for (const c of await connectionPerLoop(srv.url, 2)) {
      const plain = await c.request('POST', '/api/v1/config/fine', { 'X-Api-Key': KEY }, '{}');
      expect(plain.status, plain.body).toBe(200);
      expect(JSON.parse(plain.body)).toEqual({ ok: true });
      const wrapped = await c.request('POST', '/api/v1/config/Big/dynamic', { 'X-Api-Key': KEY }, '{"u":"p1"}');
      expect(wrapped.status, wrapped.body.slice(0, 200)).toBe(200);
      expect((JSON.parse(wrapped.body) as { data: { a: number } }).data.a).toBe(2);
      c.close();
    }
  });
});

describe('live at once on every loop', () => {
  it('after each admin write answers, the very next request on each loop sees it', async () => {
    const srv = shared;
    await admin(srv, 'PUT', 'environments/live');
    const created = await admin(srv, 'POST', 'environments/live/keys');
    const key = field(created.key, 'key');
    const conns = await connectionPerLoop(srv.url, 2);
    const headers = { 'X-Api-Key': key };
    const stale: string[] = [];
    const readOn = async (c: Connection, loop: number, i: number, hash: unknown): Promise<void> => {
      const plain = await c.request('POST', '/api/v1/config/counter', headers, '{}');
      const wrapped = await c.request('POST', '/api/v1/config/COUNTER/dynamic', headers, `{"u":"user-${i}"}`);
      const catalog = await c.request('GET', '/api/v1/env/catalog', headers);
      const p = (JSON.parse(plain.body) as { n?: number }).n;
      const w = JSON.parse(wrapped.body) as { data?: { n?: number }; hash?: string };
      const h = (JSON.parse(catalog.body) as { catalog?: { Counter?: { h?: string } } }).catalog?.Counter?.h;
      if (p !== i || w.data?.n !== i || w.hash !== hash || h !== hash) stale.push(`cycle ${i} loop ${loop}: ${plain.body} ${wrapped.body.slice(0, 80)} ${h}`);
    };
    for (let i = 0; i < 150; i++) {
      const put = await admin(srv, 'PUT', 'environments/live/content/Counter', `{"n":${i}}`);
      await Promise.all(conns.map((c, loop) => readOn(c, loop, i, put.hash)));
    }
    expect(stale).toEqual([]);
    // A revoked key is refused on every loop from the next request on.
    await admin(srv, 'DELETE', `environments/live/keys/${String(created.id)}`);
    for (const c of conns) {
      const r = await c.request('POST', '/api/v1/config/counter', headers, '{}');
      expect(r.status).toBe(401);
      expect((JSON.parse(r.body) as { error: { code: string } }).error.code).toBe('invalid_api_key');
      c.close();
    }
  }, 120_000);
});

/** Runs `rcd serve` on `port` until it exits by itself (it must: a half-started server hits the timeout). */
async function serveUntilExit(port: number, loops: number): Promise<Exit> {
  const dir = tempDir();
  try {
    return await serveToExit(['--store', 'memory:', '--host', '127.0.0.1', '--port', String(port), '--admin', 'false', '--threads', '2', '--http-threads', String(loops)], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the port', () => {
  it.each([
    [2, 2],
    [2, 1],
    [1, 2],
  ])('a server of %i loops holds it: another of %i loops exits 1 with one line, the first serves on', async (first, second) => {
    const srv = first === 2 ? shared : await start({ bundle: BUNDLE, args: ['--http-threads', String(first)] });
    const port = Number(new URL(srv.url).port);
    const run = await serveUntilExit(port, second);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot listen on 127\.0\.0\.1:\d+ \(the port is in use or not permitted\)/);
    for (let i = 0; i < 10; i++) {
      const r = await call(srv.url, '/api/v1/config/fine', { key: KEY, headers: { connection: 'close' } });
      expect(r.status).toBe(200);
    }
  });
});

describe('shutdown', () => {
  it('SIGTERM: every loop stops accepting, finishes the requests it holds, then the process exits 0', async () => {
    const srv = await start({ bundle: BUNDLE });
    const conns = await connectionPerLoop(srv.url, 2);
    const body = '{"u":"draining-user","p":{"level":3}}';
    // A request on each loop whose body is half sent: accepted, in flight.
    const answers = conns.map((c) => c.begin('POST', '/api/v1/config/Big/dynamic', { 'X-Api-Key': KEY }, body, 10));
    await new Promise((r) => setTimeout(r, 200));
    const exit = srv.stop();
    await new Promise((r) => setTimeout(r, 500));
    // No loop accepts a new connection any more.
    const refused = await new Promise<boolean>((resolve) => {
      const { hostname, port } = new URL(srv.url);
      const probe = connect(Number(port), hostname);
      probe.once('connect', () => {
        probe.destroy();
        resolve(false);
      });
      probe.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
    for (const c of conns) c.more(body.slice(10));
    const replies = await Promise.all(answers);
    for (const r of replies) {
      expect(r.status).toBe(200);
      expect((JSON.parse(r.body) as { data: { a: number } }).data.a).toBe(2);
    }
    expect(await exit).toBe(0);
    expect(srv.stdout()).toContain('stopped');
    for (const c of conns) c.close();
  });

  it.each([1, 0])('loop %i crashing is logged and ends the process with exit code 1 (no abort)', async (index) => {
    const srv = await start({ bundle: BUNDLE, env: { RCD_TEST_LOOP_CRASH: `${index}:500` } });
    const code = await new Promise<number | null>((resolve) => {
      if (srv.child.exitCode !== null || srv.child.signalCode !== null) resolve(srv.child.exitCode);
      else srv.child.once('exit', (c) => resolve(c));
    });
    expect(code, srv.stderr()).toBe(1);
    expect(srv.stderr()).toContain(`delivery loop ${index} crashed: Error: RCD_TEST_LOOP_CRASH: delivery loop ${index} crashed on purpose`);
    // Not aborted by a thread ending with its uWS sockets open.
    expect(srv.stderr()).not.toContain('Assertion failed');
    // A crashed loop thread: the other loops drained and the server stopped in order.
    if (index === 1) expect(srv.stdout()).toContain('stopped');
  });
});

/**
 * Structured logs of a real server: with --log-format json every line of stdout and stderr is one
 * JSON object (level, time, pid, msg), and no line holds an API key, the admin token or the demo key,
 * whatever was done to the server (keys created and used, wrong keys and tokens, edits, a stop).
 * --log-level drops the levels below it; bad values stop the start with one line.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { freePort } from '../helpers/free-port.js';

const KEY = 'key-logs-secret-1';
/** The environment `--seed-demo` creates (src/runtime/demo.ts). */
const DEMO_ENV = 'demo';
const ADMIN_TOKEN = 'test-admin-token';
const JSON_LOG = { RCD_LOG_FORMAT: 'json' };
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const s of running.splice(0)) await s.dispose();
});

interface Line {
  level: string;
  time: string;
  pid: number;
  msg: string;
}

/** Every non-empty line, parsed; fails on a line that is not a log object. */
function parseLines(text: string): Line[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const line = JSON.parse(l) as Line;
      expect(['debug', 'info', 'warn', 'error', 'fatal']).toContain(line.level);
      expect(Number.isNaN(Date.parse(line.time))).toBe(false);
      expect(typeof line.pid).toBe('number');
      expect(typeof line.msg).toBe('string');
      return line;
    });
}


describe('JSON logs', () => {
  it('are one JSON object a line, on stdout (info) and stderr (warnings, errors), and hold no secret', async () => {
    // An empty store: the demo environment is seeded and its key written to a file.
    const srv = await startServer({ admin: true, seedDemo: true, env: JSON_LOG });
    running.push(srv);
    const admin = srv.adminUrl!;
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const env = `${admin}/admin/v1/environments/${DEMO_ENV}`;
    expect((await fetch(`${env}/content/Shop`, { method: 'PUT', headers: auth, body: '{"a":1}' })).status).toBe(200);
    const created = await fetch(`${env}/keys`, { method: 'POST', headers: auth });
    expect(created.status).toBe(201);
    const newKey = ((await created.json()) as { key: string }).key;
    expect((await fetch(`${env}/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ key: KEY }) })).status).toBe(201);
    expect((await call(srv.url, '/api/v1/config/Shop', { key: newKey })).status).toBe(200);
    expect((await call(srv.url, '/api/v1/config/Shop', { key: KEY })).status).toBe(200);
    expect((await call(srv.url, '/api/v1/config/Shop', { key: `${KEY}-wrong` })).status).toBe(401);
    expect((await fetch(`${admin}/admin/v1/environments`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}-wrong` } })).status).toBe(401);
    expect((await fetch(`${env}/content/Shop`, { method: 'PUT', headers: auth, body: '{"a":2}' })).status).toBe(200);
    expect(await srv.stop()).toBe(0);

    const out = parseLines(srv.stdout());
    const err = parseLines(srv.stderr());
    expect(out.every((l) => l.level === 'info' || l.level === 'debug')).toBe(true);
    expect(err.every((l) => l.level === 'warn' || l.level === 'error' || l.level === 'fatal')).toBe(true);
    const messages = out.map((l) => l.msg);
    expect(messages.some((m) => m.startsWith('listening on http://127.0.0.1:'))).toBe(true);
    expect(messages.some((m) => m.startsWith('admin: ') && m.includes('content.put'))).toBe(true);
    // The demo key is named by its file, never printed.
    const demoLine = messages.find((m) => m.startsWith('demo API key in '));
    expect(demoLine).toBeDefined();
    const demoKey = readFileSync(demoLine!.slice('demo API key in '.length).trim(), 'utf8').trim();
    expect(demoKey.length).toBeGreaterThanOrEqual(8);

    const all = srv.stdout() + srv.stderr();
    for (const secret of [KEY, newKey, ADMIN_TOKEN, demoKey]) expect(all).not.toContain(secret);
  }, 60_000);

  it('--log-level warn drops the info lines; delivery is unchanged', async () => {
    const dir = tempDir();
    const port = await freePort();
    const bundle = join(dir, 'bundle.json');
    writeFileSync(bundle, JSON.stringify({ environments: { prod: { keys: [KEY], content: { Shop: { json: { a: 1 } } } } } }));
    const args = [BIN, 'serve', '--store', `sqlite:${join(dir, 'rcd.db')}`, '--import', bundle, '--host', '127.0.0.1', '--port', String(port), '--threads', '1'];
    args.push('--admin', 'false', '--metrics', 'false', '--seed-demo', 'false', '--log-level', 'warn');
    const child = spawn(process.execPath, args, { cwd: dir, env: { ...process.env, ...JSON_LOG }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      // Nothing is printed at this level, "listening on" included: ready once /readyz says so.
      const base = `http://127.0.0.1:${port}`;
      await expect
        .poll(async () => (await call(base, '/readyz', { method: 'GET', key: null, contentType: null }).catch(() => ({ status: 0 }))).status, { timeout: 20_000, interval: 100 })
        .toBe(200);
      expect((await call(base, '/api/v1/config/Shop', { key: KEY })).json).toEqual({ a: 1 });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(out).toBe('');
    parseLines(err);
  }, 60_000);

  it('a bad --log-level or --log-format stops the start with one line naming the flag', () => {
    const dir = tempDir();
    for (const [flag, value] of [
      ['--log-level', 'verbose'],
      ['--log-format', 'xml'],
    ] as const) {
      const r = spawnSync(process.execPath, [BIN, 'serve', '--store', 'memory:', '--port', '0', '--admin', 'false', '--metrics', 'false', flag, value], { cwd: dir, encoding: 'utf8', timeout: 20_000 });
      expect(r.status).toBe(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(flag);
      expect(r.stdout).not.toMatch(/listening/);
    }
  });
});

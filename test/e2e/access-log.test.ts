/**
 * The sampled access log (--access-log RATE) of a real server: off by default; at rate 1 one line per
 * content request with its route, status, body bytes, duration and the key's id (never the key); at
 * rate 0.1 one request in ten; the pretty format prints the same fields.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'key-access-secret-1';
const BUNDLE = { environments: { prod: { keys: [KEY], content: { Shop: { json: { items: ['sword'] } }, Hud: { json: { a: 1 } } } } } };
const BODY = '{"u":"p1","p":{},"v":"1.0.0"}';
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const s of running.splice(0)) await s.dispose();
});

interface AccessLine {
  level: string;
  msg: string;
  time: string;
  loop: number;
  route: string;
  status: number;
  outcome: string;
  bytes: number;
  durationMs: number;
  keyId: string;
}

function accessLines(stdout: string): AccessLine[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as AccessLine & { msg: string })
    .filter((l) => l.msg === 'access');
}

/** Waits until `count` lines are there (records are sent every 250 ms), then a little more for any extra. */
async function settle(read: () => number, count: number): Promise<void> {
  await expect.poll(read, { timeout: 15_000, interval: 100 }).toBeGreaterThanOrEqual(count);
  await new Promise((r) => setTimeout(r, 700));
}

// Each case has a server of its own and waits out report intervals on it: the three run at once.
describe.concurrent('access log', () => {
  it('at rate 1: one JSON line per content request with route, status, bytes, duration and key id, never the key', async () => {
    const srv = await startServer({ bundle: BUNDLE, admin: true, env: { RCD_LOG_FORMAT: 'json' }, args: ['--access-log', '1', '--http-threads', '1'] });
    running.push(srv);
    const keys = (await (await fetch(`${srv.adminUrl}/admin/v1/environments/prod/keys`, { headers: { authorization: 'Bearer test-admin-token' } })).json()) as { keys: { id: string }[] };
    expect(keys.keys).toHaveLength(1);
    const keyId = keys.keys[0]!.id;

    const ok = await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: BODY });
    expect(ok.status).toBe(200);
    const notModified = await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: BODY, headers: { 'if-none-match': ok.headers.get('etag')! } });
    expect(notModified.status).toBe(304);
    const missing = await call(srv.url, '/api/v1/config/Missing', { key: KEY, body: BODY });
    expect(missing.status).toBe(404);
    const combine = await call(srv.url, `/api/v1/combine?c=${encodeURIComponent('["Shop","Hud"]')}`, { key: KEY, body: BODY });
    expect(combine.status).toBe(200);
    // Refused before a content request exists (no key id to log): not in the access log.
    expect((await call(srv.url, '/api/v1/config/Shop', { key: `${KEY}-wrong`, body: BODY })).status).toBe(401);

    await settle(() => accessLines(srv.stdout()).length, 4);
    const lines = accessLines(srv.stdout());
    expect(lines.map((l) => [l.route, l.status, l.outcome])).toEqual([
      ['config', 200, 'miss'],
      ['config', 304, 'not_modified'],
      ['config', 404, 'none'],
      ['combine', 200, 'miss'],
    ]);
    // Body bytes on the wire: what Content-Length said (a 304 has none).
    expect(lines.map((l) => l.bytes)).toEqual([Number(ok.headers.get('content-length')), 0, Buffer.byteLength(missing.text), Number(combine.headers.get('content-length'))]);
    for (const l of lines) {
      expect(l.level).toBe('info');
      expect(l.keyId).toBe(keyId);
      expect(l.durationMs).toBeGreaterThanOrEqual(0);
      expect(l.durationMs).toBeLessThan(60_000);
      expect(Number.isNaN(Date.parse(l.time))).toBe(false);
      expect(l.loop).toBeGreaterThanOrEqual(0);
    }
    expect(srv.stdout() + srv.stderr()).not.toContain(KEY);
  }, 60_000);

  it('at rate 0.1: one content request in ten (pretty format: the same fields)', async () => {
    const srv = await startServer({ bundle: BUNDLE, args: ['--access-log', '0.1', '--http-threads', '1'] });
    running.push(srv);
    for (let i = 0; i < 40; i++) expect((await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: BODY })).status).toBe(200);
    const pretty = (): string[] => srv.stdout().split('\n').filter((l) => l.startsWith('rcd: access '));
    await settle(() => pretty().length, 4);
    const lines = pretty();
    expect(lines).toHaveLength(4);
    for (const l of lines) expect(l).toMatch(/^rcd: access \S+ route=config status=200 outcome=(hit|miss) bytes=\d+ ms=[\d.]+ key=\S+ loop=0$/);
    expect(srv.stdout()).not.toContain(KEY);
  }, 60_000);

  it('is off by default', async () => {
    const srv = await startServer({ bundle: BUNDLE, env: { RCD_LOG_FORMAT: 'json' } });
    running.push(srv);
    for (let i = 0; i < 10; i++) expect((await call(srv.url, '/api/v1/config/Shop', { key: KEY, body: BODY })).status).toBe(200);
    // Two report intervals and more: nothing was sampled.
    await new Promise((r) => setTimeout(r, 1000));
    expect(accessLines(srv.stdout())).toEqual([]);
  }, 60_000);
});

/**
 * Failure paths a production service must get right: overload answers 503 fast, an internal fault
 * answers 500 without leaking details and does not take the server down, a streamed body over the
 * limit is cut off, and a server stopped with SIGTERM finishes what it has in flight (quick restarts
 * one after another: test/e2e/quick-restarts.test.ts).
 */
import Database from 'better-sqlite3';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLE, KEY } from '../helpers/failure-bundle.js';
import { call, errorCode, startServer, type ServerProcess } from '../helpers/server-process.js';

let server: ServerProcess | undefined;
afterEach(async () => {
  await server?.dispose();
  server = undefined;
});

describe('overload', () => {
  it('answers 503 overloaded with Retry-After when jobs in flight exceed --max-pending', async () => {
    server = await startServer({ bundle: BUNDLE, args: ['--max-pending', '1', '--max-combine-ids', '1', '--threads', '1'] });
    const body = JSON.stringify({ u: 'x' });
    const replies = await Promise.all(
      Array.from({ length: 200 }, (_, i) => call(server!.url, `/api/v1/config/Many${i}`, { key: KEY, body })),
    );
    const overloaded = replies.filter((r) => r.status === 503);
    const ok = replies.filter((r) => r.status === 200);
    expect(overloaded.length).toBeGreaterThan(0);
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.length + overloaded.length).toBe(200);
    expect(errorCode(overloaded[0]!)).toBe('overloaded');
    expect(overloaded[0]!.headers.get('retry-after')).toBe('1');
  });
});

/**
 * One server for the corrupt mapping and the streamed body: the body test asks only for `Fine`, which
 * has no mapping, and the corrupt-data test's bodies are far under the limit, so neither sees the other.
 */
let shared: ServerProcess;
beforeAll(async () => {
  shared = await startServer({ bundle: BUNDLE, args: ['--max-body', '1000'] });
});
afterAll(async () => {
  await shared?.dispose();
});

describe('internal faults', () => {
  it('answers 500 internal without details when stored data is corrupt, and keeps serving the rest', async () => {
    const server = shared;
    // Damage the stored mapping behind the server's back (as a bad manual edit of the file would).
    const db = new Database(join(server.dir, 'rcd.db'));
    db.prepare("UPDATE mappings SET json = '{\"rules\": 5}'").run();
    db.close();

    const r = await call(server.url, '/api/v1/config/Mapped/dynamic', { key: KEY, body: '{}' });
    expect(r.status).toBe(500);
    expect(errorCode(r)).toBe('internal');
    expect(r.text).not.toMatch(/at .*\.js|stack|rules/);

    const fine = await call(server.url, '/api/v1/config/Fine/dynamic', { key: KEY, body: '{}' });
    expect(fine.status).toBe(200);
    const plain = await call(server.url, '/api/v1/config/Mapped', { key: KEY, body: '{}' });
    expect(plain.json).toEqual({ a: 1 });
    await expect.poll(() => server.stderr()).toMatch(/error/);
  });
});

describe('streamed bodies', () => {
  it('cuts off a chunked body that grows past --max-body with 413', async () => {
    const url = new URL(shared.url);
    const result = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: '/api/v1/config/Fine', method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d)).on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.write('{"u":"');
      const chunk = 'y'.repeat(400);
      let sent = 0;
      const pump = (): void => {
        if (sent++ < 10) {
          req.write(chunk, () => setTimeout(pump, 5));
        } else {
          req.end('"}');
        }
      };
      pump();
    });
    expect(result.status).toBe(413);
    expect((JSON.parse(result.body) as { error: { code: string } }).error.code).toBe('payload_too_large');
  });
});

describe('graceful shutdown', () => {
  it('finishes requests in flight on SIGTERM, then exits 0', async () => {
    server = await startServer({ bundle: BUNDLE, args: ['--threads', '1'] });
    const pending = Array.from({ length: 40 }, (_, i) =>
      call(server!.url, '/api/v1/config/Big/dynamic', { key: KEY, body: JSON.stringify({ u: `user-${i}` }) }),
    );
    // Signal as soon as the first answer is back: the others are accepted and in flight.
    await Promise.race(pending);
    const exit = server.stop();
    const replies = await Promise.all(pending);
    expect(replies.every((r) => r.status === 200)).toBe(true);
    expect(await exit).toBe(0);
    expect(server.stdout()).toContain('stopped');
  });
});

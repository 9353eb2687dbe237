/**
 * Requests that once ended the process or desynced a connection, against the real server: a
 * failure on a result path stays with its request, ambiguous framing is refused, pipelined
 * requests are answered in order (or, where uWS cannot, the connection closes at once), and a
 * configuration that could never admit a combine is refused at start.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, call, errorCode, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { rawPost } from '../helpers/http-inputs.js';
import { rawExchange, responsesIn, type RawOutcome } from '../helpers/raw.js';

const KEY = 'safety-key-0001';
const HEADERS = { 'X-Api-Key': KEY, 'Content-Type': 'application/json' };
const content: Record<string, { json: unknown }> = { StoreLayout: { json: { slots: [1, 2, 3] } } };
for (let i = 0; i < 8; i++) content[`Cold${i}`] = { json: { cold: i } };
const BUNDLE = { environments: { env: { keys: [KEY], content } } };

let server: ServerProcess;
beforeAll(async () => {
  server = await startServer({ bundle: BUNDLE });
});
afterAll(async () => {
  await server?.dispose();
});

function port(): number {
  return Number(new URL(server.url).port);
}

function statuses(o: RawOutcome): number[] {
  return responsesIn(o.bytes).map((r) => r.status);
}

function text(o: RawOutcome): string {
  return o.bytes.toString('latin1');
}

function alive(): boolean {
  return server.child.exitCode === null && server.child.signalCode === null;
}

describe('a failure on a result path stays with its request', () => {
  it('refuses a combine id that is not well-formed Unicode with 400 invalid_query, beside an id needing a render', async () => {
    const c = encodeURIComponent('["StoreLayout","\\ud800"]');
    const r = await call(server.url, `/api/v1/combine?c=${c}`, { key: KEY, body: '{}' });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('invalid_query');
    expect(alive()).toBe(true);
    const again = await call(server.url, `/api/v1/combine?c=${encodeURIComponent('["StoreLayout"]')}`, { key: KEY, body: '{}' });
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ StoreLayout: { slots: [1, 2, 3] } });
  });

  it('answers a combine whose every id is missing with one status line and one Content-Type', async () => {
    const c = encodeURIComponent('["Nope","Nah x","ünïcode"]');
    const r = await rawExchange(port(), [rawPost(`/api/v1/combine?c=${c}`, HEADERS, '{}')], { untilResponses: 1 });
    expect(statuses(r)).toEqual([200]);
    expect(text(r).match(/^content-type:/gim)).toHaveLength(1);
    expect(text(r)).toMatch(/^x-missing-content: Nope,Nah%20x,%C3%BCn%C3%AFcode\r$/im);
  });
});

describe('ambiguous framing (request smuggling)', () => {
  const smuggled = 'GET /healthz HTTP/1.1\r\nHost: rcd\r\n\r\n';
  const headOf = (framing: string, body: string): string =>
    `POST /api/v1/config/StoreLayout HTTP/1.1\r\nHost: rcd\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\n${framing}\r\n${body}`;

  it('closes the connection on two Content-Length headers without answering either request', async () => {
    const body = '{}' + smuggled;
    const r = await rawExchange(port(), [headOf(`Content-Length: 2\r\nContent-Length: ${body.length}\r\n`, body)]);
    expect(r.closed).toBe(true);
    expect(r.closeMs).toBeLessThan(1000);
    expect(r.bytes.length).toBe(0);
  });

  it('closes the connection on Content-Length beside Transfer-Encoding', async () => {
    const body = '2\r\n{}\r\n0\r\n\r\n';
    const r = await rawExchange(port(), [headOf(`Content-Length: 2\r\nTransfer-Encoding: chunked\r\n`, body)]);
    expect(r.closed).toBe(true);
    expect(r.bytes.length).toBe(0);
  });

  it('refuses it on the catalog, health and unknown routes too, and keeps serving', async () => {
    for (const line of ['GET /api/v1/env/catalog', 'GET /healthz', 'GET /nowhere', 'GET /api/v1/combine']) {
      const r = await rawExchange(port(), [`${line} HTTP/1.1\r\nHost: rcd\r\nContent-Length: 0\r\nContent-Length: 37\r\n\r\n${smuggled}`]);
      expect(r.closed, line).toBe(true);
      expect(r.bytes.length, line).toBe(0);
    }
    const ok = await call(server.url, '/api/v1/config/StoreLayout', { key: KEY, body: '{}' });
    expect(ok.status).toBe(200);
  });

  it('still takes a single Content-Length and a chunked body', async () => {
    const one = await rawExchange(port(), [rawPost('/api/v1/config/StoreLayout', HEADERS, '{}')], { untilResponses: 1 });
    expect(statuses(one)).toEqual([200]);
    const chunked = await rawExchange(
      port(),
      [`POST /api/v1/config/StoreLayout HTTP/1.1\r\nHost: rcd\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`],
      { untilResponses: 1 },
    );
    expect(statuses(chunked)).toEqual([200]);
  });
});

describe('pipelined requests', () => {
  it('answers requests pipelined in one write in order when each is answered at once', async () => {
    // Warm the front cache so the content request is answered without the pool.
    await call(server.url, '/api/v1/config/StoreLayout', { key: KEY, body: '{}' });
    const writes = rawPost('/api/v1/config/StoreLayout', HEADERS, '{}') + 'GET /healthz HTTP/1.1\r\nHost: rcd\r\n\r\n' + rawPost('/api/v1/config/Missing', HEADERS, '{}');
    const r = await rawExchange(port(), [writes], { untilResponses: 3 });
    expect(statuses(r)).toEqual([200, 200, 404]);
    expect(text(r).indexOf('"slots"')).toBeLessThan(text(r).indexOf('"status":"ok"'));
  });

  it('closes at once, never hangs, when a request comes in the same read behind one that waits for the render pool (uWS parses it at once)', async () => {
    const writes = rawPost('/api/v1/config/Cold0', HEADERS, '{}') + 'GET /healthz HTTP/1.1\r\nHost: rcd\r\n\r\n';
    const r = await rawExchange(port(), [writes]);
    expect(r.closed).toBe(true);
    expect(r.closeMs).toBeLessThan(1000);
    expect(alive()).toBe(true);
    // The render it started is cached; the same request on its own is answered.
    const single = await call(server.url, '/api/v1/config/Cold0', { key: KEY, body: '{}' });
    expect(single.json).toEqual({ cold: 0 });
  });
});

describe('pipelined behind a request that waits for the render pool', () => {
  // One render thread and three items of a few MB each: a combine of them keeps the pool busy for a
  // few hundred ms on a fast machine, so a request written 40 ms after it (a read of its own) arrives
  // while it is pending.
  const big = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`k${n}-${i}`, `value ${i} of item ${n}, long enough to weigh`]));
  const heavy: Record<string, { json: unknown }> = { Light: { json: { light: true } } };
  for (let i = 0; i < 3; i++) heavy[`Heavy${i}`] = { json: big(i) };
  const COMBINE = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Heavy0', 'Heavy1', 'Heavy2']));
  let slow: ServerProcess;
  beforeAll(async () => {
    slow = await startServer({ bundle: { environments: { env: { keys: [KEY], content: heavy } } }, args: ['--threads', '1', '--http-threads', '1'] });
  }, 120_000);
  afterAll(async () => {
    await slow?.dispose();
  });

  it('answers a request sent behind a front-cache miss, in order, once the miss is answered (both pool misses)', async () => {
    const r = await rawExchange(Number(new URL(slow.url).port), [rawPost(COMBINE, HEADERS, '{}'), rawPost('/api/v1/config/Light', HEADERS, '{}')], { gapMs: 40, waitMs: 30_000, untilResponses: 2 });
    // The combine's answer came after the second request was written: the two were pipelined.
    expect(r.firstByteMs).toBeGreaterThan(0);
    const answers = responsesIn(r.bytes);
    expect(answers.map((a) => a.status)).toEqual([200, 200]);
    expect(Object.keys(JSON.parse(answers[0]!.body.toString('utf8')) as object)).toEqual(['Heavy0', 'Heavy1', 'Heavy2']);
    expect(JSON.parse(answers[1]!.body.toString('utf8'))).toEqual({ light: true });
  }, 60_000);
});

describe('limits that could never be met', () => {
  it('refuses --max-pending below --max-combine-ids at start, with one line and exit 1', () => {
    const dir = tempDir();
    const r = spawnSync(process.execPath, [BIN, 'serve', '--store', 'memory:', '--port', '0', '--admin', 'false', '--max-pending', '10', '--max-combine-ids', '100'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/--max-pending/);
    expect(r.stdout).not.toMatch(/listening/);
  });
});

describe('--reject-ambiguous-framing false (behind a proxy that re-frames requests)', () => {
  it('leaves framing to uWS: the first Content-Length wins', async () => {
    const lax = await startServer({ bundle: BUNDLE, args: ['--reject-ambiguous-framing', 'false'] });
    try {
      const r = await rawExchange(Number(new URL(lax.url).port), [
        `POST /api/v1/config/StoreLayout HTTP/1.1\r\nHost: rcd\r\nX-Api-Key: ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}`,
      ], { untilResponses: 1 });
      expect(responsesIn(r.bytes).map((x) => x.status)).toEqual([200]);
    } finally {
      await lax.dispose();
    }
  });
});

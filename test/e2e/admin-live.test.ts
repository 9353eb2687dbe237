/**
 * "Edits are available at once": 1,000 write-then-read cycles against the server process with two
 * worker threads. After each admin write answers 2xx, the very next delivery requests (plain,
 * wrapped, catalog, fired together so they spread over the threads) must all see it.
 */
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';
import { field, parseAnswer, type Answer } from '../helpers/answers.js';
import { decoded, exchange, type RawReply } from '../helpers/http-raw.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
let srv: ServerProcess;
let key: string;

/**
 * Keep-alive connections, as many as requests in flight, through node:http: thousands of requests
 * cost the test process a fraction of what fetch's do. Each asks for a compressed answer as fetch does.
 */
const agent = new Agent({ keepAlive: true });

function send(url: string, method: string, headers: Record<string, string>, body: string | undefined): Promise<RawReply> {
  return exchange(url, method, { 'accept-encoding': 'gzip, br', ...headers }, body, agent);
}

interface Reply {
  status: number;
  text: string;
  json: unknown;
}

/** A delivery request with the key, if any (POST with `body`, '{}' unless given, or GET). */
async function call(base: string, path: string, opts: { key: string | undefined; method?: 'GET'; body?: string }): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.key !== undefined) headers['x-api-key'] = opts.key;
  const r = await send(base + path, opts.method ?? 'POST', headers, opts.method === 'GET' ? undefined : (opts.body ?? '{}'));
  const text = decoded(r).toString('utf8');
  let json: unknown = undefined;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, text, json };
}

async function adm(method: string, path: string, body?: string): Promise<Answer> {
  const res = await send(`${srv.adminUrl}/admin/v1/${path}`, method, AUTH, body ?? (method === 'DELETE' ? undefined : ''));
  const json = parseAnswer(decoded(res).toString('utf8'));
  if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--threads', '3'] });
  await adm('PUT', 'environments/live');
  key = field((await adm('POST', 'environments/live/keys')).key, 'key');
});

afterAll(async () => {
  agent.destroy();
  await srv?.dispose();
});

describe('no stale reads after an admin write', () => {
  it('1,000 content write-then-read cycles, each read on every endpoint sees the write', async () => {
    const stale: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const put = await adm('PUT', 'environments/live/content/Counter', `{"n":${i},"pad":"${'x'.repeat(i % 7)}"}`);
      const [plain, wrapped, combined, catalog] = await Promise.all([
        call(srv.url, '/api/v1/config/counter', { key }),
        call(srv.url, '/api/v1/config/COUNTER/dynamic', { key, body: `{"u":"user-${i}"}` }),
        call(srv.url, `/api/v1/combine?c=${encodeURIComponent('["Counter"]')}&dynamic=true`, { key }),
        call(srv.url, '/api/v1/env/catalog', { method: 'GET', key }),
      ]);
      const p = plain.json as { n?: number };
      const w = wrapped.json as { data?: { n?: number }; hash?: string };
      const c = combined.json as { Counter?: { hash?: string } };
      const h = (catalog.json as { catalog?: { Counter?: { h?: string } } }).catalog?.Counter?.h;
      if (p.n !== i || w.data?.n !== i || w.hash !== put.hash || c.Counter?.hash !== put.hash || h !== put.hash) {
        stale.push(`cycle ${i}: plain ${plain.text} wrapped ${wrapped.text.slice(0, 120)} catalog ${h} want ${put.hash}`);
      }
    }
    expect(stale).toEqual([]);
  }, 180_000);

  it('mapping writes and key revocations apply to the very next request', async () => {
    await adm('PUT', 'environments/live/content/Theme', '{"color":"red"}');
    const stale: string[] = [];
    for (let i = 0; i < 100; i++) {
      await adm('PUT', 'environments/live/content/Theme/mapping', JSON.stringify({ rules: [{ segment: `s${i}`, patch: { color: `c${i}` } }] }));
      const r = await call(srv.url, '/api/v1/config/theme/dynamic', { key, body: '{}' });
      const body = r.json as { data?: { color?: string }; meta?: { seg?: { n: string }[] } };
      if (body.data?.color !== `c${i}` || body.meta?.seg?.[0]?.n !== `s${i}`) stale.push(`mapping cycle ${i}: ${r.text}`);

      const fresh = await adm('POST', 'environments/live/keys');
      const ok = await call(srv.url, '/api/v1/config/theme', { key: fresh.key });
      await adm('DELETE', `environments/live/keys/${fresh.id}`);
      const refused = await call(srv.url, '/api/v1/config/theme', { key: fresh.key });
      if (ok.status !== 200 || refused.status !== 401) stale.push(`key cycle ${i}: ${ok.status} then ${refused.status}`);
    }
    expect(stale).toEqual([]);
  }, 120_000);
});

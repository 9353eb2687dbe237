/**
 * Deeply nested and oversized JSON on a real server (SQLite store, and the schedule and bundle cases
 * on PostgreSQL too): content given as `json` to a scheduled change, a bundle (its content and its
 * schedules), an import, a plain content PUT, and a request's `p` on every delivery route and both
 * OFREP routes. Each is refused with its stable code (400 invalid_content / invalid_bundle /
 * invalid_body, OFREP INVALID_CONTEXT), nothing is written, the server stays healthy and its peak
 * RSS stays far below what the refused input would have cost.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAnswer } from '../helpers/answers.js';
import { createDatabase } from '../helpers/postgres.js';
import { call, errorCode, healthOf, startServer, type Reply, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
/** The limits these tests meet: the defaults (docs/admin.md, docs/api.md). */
const MAX_DEPTH = 64;
/** Deep enough that the text of its indented form is ~8 MB (the depth squared, twice): accepted before the limit. */
const DEEP = 2000;
/** Deep enough to overflow a recursive serializer or matcher: a 500 before the limit. */
const VERY_DEEP = 20_000;
/** A server that refused everything below never came near this peak (the unrefused inputs cost GBs). */
const PEAK_RSS_LIMIT = 1024 * 1024 * 1024;

/** `[[[…0…]]]` as text, `levels` arrays deep. */
function nestedText(levels: number): string {
  return '['.repeat(levels) + '0' + ']'.repeat(levels);
}

const DEEP_MARK = '\u0000deep:';

/**
 * Where a body holds `nested(n)`, its text holds nestedText(n): bodies are written as text, since
 * JSON.stringify (recursive) cannot write what the server is sent.
 */
function nested(levels: number): string {
  return DEEP_MARK + String(levels);
}

function bodyText(body: unknown): string {
  return JSON.stringify(body).replace(/"\\u0000deep:(\d+)"/g, (_m, n: string) => nestedText(Number(n)));
}

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; json: ReturnType<typeof parseAnswer> & Record<string, unknown> }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: AUTH,
    body: body === undefined ? undefined : typeof body === 'string' ? body : bodyText(body),
  });
  return { status: res.status, json: parseAnswer(await res.text()) as ReturnType<typeof parseAnswer> & Record<string, unknown> };
}

async function ok(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await adm(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/** Peak resident set of the server process so far (Linux: VmHWM). */
function peakRss(srv: ServerProcess): number {
  const status = readFileSync(`/proc/${srv.child.pid}/status`, 'utf8');
  const m = /VmHWM:\s+(\d+) kB/.exec(status);
  if (m === null) throw new Error('no VmHWM in /proc/PID/status');
  return Number(m[1]) * 1024;
}

/** Environment `env` with a key, `Game` (a mapping whose rule tests the attribute `tags`) and `Plain`. */
async function seed(srv: ServerProcess, env = 'live'): Promise<string> {
  await ok(srv, 'PUT', `environments/${env}`);
  const { key } = (await ok(srv, 'POST', `environments/${env}/keys`)) as { key: string };
  await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"difficulty":"normal"}');
  await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, { rules: [{ segment: 'vip', when: { tags: 'vip' }, patch: { difficulty: 'hard' } }] });
  await ok(srv, 'PUT', `environments/${env}/content/Plain`, '{"a":1}');
  return key;
}

/** What the store holds of `live`: its content list and its schedules, to show nothing was written. */
async function written(srv: ServerProcess): Promise<unknown> {
  const content = (await ok(srv, 'GET', 'environments/live/content')).content as { id: string; revision?: number }[];
  const schedules = (await ok(srv, 'GET', 'environments/live/schedules')).schedules as unknown[];
  return { content: content.map((c) => c.id).sort(), schedules: schedules.length };
}

/** The scheduled-change and bundle cases, the same on either store. */
function contentCases(server: () => ServerProcess): void {
  it.each([
    ['2,000 levels (an 8 MB indented text)', DEEP],
    ['20,000 levels (a stack overflow)', VERY_DEEP],
  ])('a scheduled content.put given as json %s is refused with invalid_content, nothing stored', async (_name, levels) => {
    const srv = server();
    const before = await written(srv);
    const r = await adm(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'Deep', json: { a: nested(levels) } }] });
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_content');
    expect(await written(srv)).toEqual(before);
  });

  it('a scheduled content.put as JSONC text nested past the limit is refused with invalid_content', async () => {
    const srv = server();
    const r = await adm(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'Deep', text: nestedText(MAX_DEPTH + 1) }] });
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_content');
  });

  it.each([
    ['content given as json', { environments: { live: { content: { Deep: { json: nested(DEEP) } } } } }],
    ['content given as json, 20,000 levels', { environments: { live: { content: { Deep: { json: nested(VERY_DEEP) } } } } }],
    ['a revision given as text', { environments: { live: { content: { Deep: { revisions: [{ text: nestedText(MAX_DEPTH + 1) }] } } } } }],
    ['a schedule of the bundle', { environments: { live: {} }, schedules: [{ env: 'live', at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'Deep', json: nested(DEEP) }] }] }],
  ])('an import whose %s nests too deeply is refused with invalid_bundle, nothing stored', async (_name, bundle) => {
    const srv = server();
    const before = await written(srv);
    const r = await adm(srv, 'POST', 'import', bundle);
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_bundle');
    expect(await written(srv)).toEqual(before);
  });

  it('a mapping nested 20,000 deep is refused with invalid_mapping (PUT, a scheduled mapping.put) and invalid_bundle (import)', async () => {
    const srv = server();
    const mapping = { rules: [{ segment: 's', when: { tags: { $eq: nested(VERY_DEEP) } }, patch: { difficulty: nested(VERY_DEEP) } }] };
    const before = await written(srv);
    const put = await adm(srv, 'PUT', 'environments/live/content/Game/mapping', mapping);
    expect(put.status).toBe(400);
    expect(put.json.error?.code).toBe('invalid_mapping');
    const scheduled = await adm(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000), ops: [{ op: 'mapping.put', id: 'Game', mapping }] });
    expect(scheduled.status).toBe(400);
    expect(scheduled.json.error?.code).toBe('invalid_mapping');
    const imported = await adm(srv, 'POST', 'import', { environments: { live: { content: { Game: { text: '{"difficulty":"normal"}', mapping } } } } });
    expect(imported.status).toBe(400);
    expect(imported.json.error?.code).toBe('invalid_bundle');
    expect(await written(srv)).toEqual(before);
    expect(((await ok(srv, 'GET', 'environments/live/content/Game')).mapping as { rules: { segment: string }[] }).rules.map((r) => r.segment)).toEqual(['vip']);
  });

  it('content at the limit is taken, by every way in', async () => {
    const srv = server();
    const value = nested(MAX_DEPTH);
    expect((await adm(srv, 'PUT', 'environments/live/content/AtLimit', bodyText(value))).status).toBe(200);
    const schedule = await adm(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'AtLimitScheduled', json: value }] });
    expect(schedule.status).toBe(201);
    expect((await adm(srv, 'DELETE', `environments/live/schedules/${String(schedule.json.id)}`)).status).toBe(200);
    expect((await adm(srv, 'POST', 'import', { environments: { live: { content: { AtLimitImported: { json: value } } } } })).status).toBe(200);
  });
}

/**
 * One SQLite server for the content cases (environment `live`) and the delivery routes (environment
 * `routes`, a key of its own): each describe checks its server's health and peak RSS after its own
 * inputs, whichever ran first.
 */
let sqlite: ServerProcess;
beforeAll(async () => {
  sqlite = await startServer({ admin: true });
});
afterAll(async () => {
  await sqlite?.dispose();
});

describe('deeply nested and oversized content (SQLite)', () => {
  let srv: ServerProcess;
  let key: string;

  beforeAll(async () => {
    srv = sqlite;
    key = await seed(srv);
  });

  contentCases(() => srv);

  it('a plain content PUT nested past the limit is refused with invalid_content, naming where', async () => {
    const r = await adm(srv, 'PUT', 'environments/live/content/Deep', '{"a":\n' + nestedText(DEEP) + '}');
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_content');
    // The first bracket past the limit: line 2, column MAX_DEPTH (the object is the first level).
    expect(r.json.error?.details).toMatchObject({ line: 2, column: MAX_DEPTH });
    expect((await adm(srv, 'GET', 'environments/live/content/Deep')).status).toBe(404);
  });

  it('json that nests within the limit but whose indented text passes --max-content-bytes is refused before it is made', async () => {
    // 62 levels, then 200,000 zeros: 400 KB of JSON whose indented text is ~25 MB (over the 10 MiB default).
    const wide = DEEP_MARK + 'wide';
    const wideText = '['.repeat(62) + new Array<string>(200_000).fill('0').join(',') + ']'.repeat(62);
    const body = (shape: unknown): string => JSON.stringify(shape).replace(JSON.stringify(wide), wideText);
    const before = await written(srv);
    const r = await adm(srv, 'POST', 'environments/live/schedules', body({ at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'Wide', json: wide }] }));
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_content');
    const imported = await adm(srv, 'POST', 'import', body({ environments: { live: { content: { Wide: { json: wide } } } } }));
    expect(imported.status).toBe(400);
    expect(imported.json.error?.code).toBe('invalid_bundle');
    expect(await written(srv)).toEqual(before);
  });

  it('the server is healthy afterwards, serves as before, and its peak RSS stayed far below the refused inputs', async () => {
    expect(await healthOf(srv)).toMatchObject({ status: 'ok' });
    const r = await call(srv.url, '/api/v1/config/Game/dynamic', { key, body: JSON.stringify({ u: 'p1', p: { tags: ['vip'] } }) });
    expect(r.status).toBe(200);
    expect((r.json as { data: unknown }).data).toEqual({ difficulty: 'hard' });
    expect(peakRss(srv)).toBeLessThan(PEAK_RSS_LIMIT);
  });
});

describe('--max-content-bytes and --max-write-bytes', () => {
  let srv: ServerProcess;

  beforeAll(async () => {
    srv = await startServer({ admin: true, args: ['--max-content-bytes', '1000', '--max-write-bytes', '1500', '--max-content-depth', '8'] });
    await ok(srv, 'PUT', 'environments/live');
  });
  afterAll(async () => {
    await srv.dispose();
  });

  it('a content PUT over --max-content-bytes is refused with invalid_content; one at it is taken', async () => {
    const at = JSON.stringify({ s: 'x'.repeat(1000 - 8) });
    expect(Buffer.byteLength(at)).toBe(1000);
    expect((await adm(srv, 'PUT', 'environments/live/content/AtBytes', at)).status).toBe(200);
    const over = JSON.stringify({ s: 'x'.repeat(1000 - 7) });
    const r = await adm(srv, 'PUT', 'environments/live/content/OverBytes', over);
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_content');
  });

  it('--max-content-depth is the limit of every way in', async () => {
    expect((await adm(srv, 'PUT', 'environments/live/content/Eight', nestedText(8))).status).toBe(200);
    const r = await adm(srv, 'PUT', 'environments/live/content/Nine', nestedText(9));
    expect(r.json.error?.code).toBe('invalid_content');
    const s = await adm(srv, 'POST', 'environments/live/schedules', { at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'Nine', json: nested(9) }] });
    expect(s.json.error?.code).toBe('invalid_content');
  });

  it('an import whose texts together pass --max-write-bytes is refused with invalid_bundle, nothing stored', async () => {
    const text = JSON.stringify({ s: 'x'.repeat(800) });
    const r = await adm(srv, 'POST', 'import', { environments: { live: { content: { One: { text }, Two: { text } } } } });
    expect(r.status).toBe(400);
    expect(r.json.error?.code).toBe('invalid_bundle');
    expect((await adm(srv, 'GET', 'environments/live/content/One')).status).toBe(404);
    const change = await adm(srv, 'POST', 'environments/live/schedules', {
      at: isoIn(3_600_000),
      ops: [
        { op: 'content.put', id: 'One', text },
        { op: 'content.put', id: 'Two', text },
      ],
    });
    expect(change.status).toBe(400);
    expect(change.json.error?.code).toBe('invalid_content');
  });
});

describe('a deeply nested p on every delivery route (SQLite)', () => {
  let srv: ServerProcess;
  let key: string;

  beforeAll(async () => {
    srv = sqlite;
    key = await seed(srv, 'routes');
  });

  const combine = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Game', 'Plain']));
  const routes: [string, string, (levels: number) => string][] = [
    ['/dynamic', '/api/v1/config/Game/dynamic', (n) => bodyText({ u: 'p1', p: { tags: nested(n) } })],
    ['/dynamic serialized', '/api/v1/config/Game/dynamic?responseType=serialized', (n) => bodyText({ u: 'p1', p: { tags: nested(n) } })],
    ['content only', '/api/v1/config/Game', (n) => bodyText({ u: 'p1', p: { tags: nested(n) } })],
    ['combine dynamic', combine + '&dynamic=true', (n) => bodyText({ u: 'p1', p: { tags: nested(n) } })],
  ];

  it.each(routes)('%s: p nested 8,000 and 20,000 deep answers 400 invalid_body', async (_name, path, body) => {
    for (const levels of [8000, VERY_DEEP]) {
      const r = await call(srv.url, path, { key, body: body(levels) });
      expect(r.status).toBe(400);
      expect(errorCode(r)).toBe('invalid_body');
    }
  });

  it.each(routes)('%s: p nested exactly to the limit is answered', async (_name, path, body) => {
    // p is the first level: its attribute `tags` may hold MAX_DEPTH - 1 more.
    const at = await call(srv.url, path, { key, body: body(MAX_DEPTH - 1) });
    expect(at.status).toBe(200);
    const over = await call(srv.url, path, { key, body: body(MAX_DEPTH) });
    expect(over.status).toBe(400);
    expect(errorCode(over)).toBe('invalid_body');
  });

  /** An OFREP evaluation: the context's attributes are p. */
  async function ofrep(path: string, levels: number): Promise<Reply> {
    return call(srv.url, path, { key, body: bodyText({ context: { targetingKey: 'p1', tags: nested(levels) } }) });
  }

  it.each([
    ['single flag', '/ofrep/v1/evaluate/flags/Game'],
    ['bulk', '/ofrep/v1/evaluate/flags'],
  ])('OFREP %s: a context nested 8,000 and 20,000 deep answers 400 INVALID_CONTEXT (invalid_body)', async (_name, path) => {
    for (const levels of [8000, VERY_DEEP]) {
      const r = await ofrep(path, levels);
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ errorCode: 'INVALID_CONTEXT', error: { code: 'invalid_body' } });
    }
    expect((await ofrep(path, MAX_DEPTH - 1)).status).toBe(200);
    expect((await ofrep(path, MAX_DEPTH)).json).toMatchObject({ errorCode: 'INVALID_CONTEXT', error: { code: 'invalid_body' } });
  });

  it('the server is healthy afterwards and evaluates as before', async () => {
    expect(await healthOf(srv)).toMatchObject({ status: 'ok' });
    const r = await call(srv.url, '/api/v1/config/Game/dynamic', { key, body: JSON.stringify({ u: 'p1', p: { tags: 'vip' } }) });
    expect((r.json as { data: unknown }).data).toEqual({ difficulty: 'hard' });
    const bulk = await ofrep('/ofrep/v1/evaluate/flags', 1);
    expect(bulk.status).toBe(200);
    expect(peakRss(srv)).toBeLessThan(PEAK_RSS_LIMIT);
  });
});

describe('deeply nested content (PostgreSQL)', () => {
  let srv: ServerProcess | undefined;
  let db: { url: string; drop: () => Promise<void> } | undefined;

  beforeAll(async () => {
    db = await createDatabase();
    srv = await startServer({ admin: true, store: db.url });
    await seed(srv);
  }, 120_000);
  afterAll(async () => {
    await srv?.dispose();
    await db?.drop();
  });

  contentCases(() => srv!);
});

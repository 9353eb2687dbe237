/**
 * The admin event stream (`GET /admin/v1/events`, docs/admin.md "Live events") against the real
 * server process: who may open it, what it sends (each audit entry as it is written: an admin
 * write with its comment, a scheduled change created and then applied by the scheduler, a change
 * made through another node of the store), what a
 * scoped token hears, the bound on open streams, a revoked token's stream ending, and the streams
 * ended cleanly by a graceful shutdown. Also the X-Rcd-Comment header's validation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const BOOTSTRAP = 'test-admin-token';

interface SseEvent {
  event: string;
  id: string | null;
  data: unknown;
}

/** An open stream: its events as they arrive, parsed; `next` waits for one matching `pred`. */
class Stream {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private buffer = '';
  private waiters: (() => void)[] = [];
  private readonly abort = new AbortController();

  static async open(base: string, token: string, query = ''): Promise<{ res: Response; stream: Stream | null }> {
    const s = new Stream();
    const res = await fetch(`${base}/admin/v1/events${query}`, { headers: { authorization: `Bearer ${token}` }, signal: s.abort.signal });
    if (res.status !== 200) return { res, stream: null };
    void s.pump(res.body!.getReader());
    return { res, stream: s };
  }

  private async pump(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const dec = new TextDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.buffer += dec.decode(value, { stream: true });
        let cut;
        while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
          const block = this.buffer.slice(0, cut);
          this.buffer = this.buffer.slice(cut + 2);
          this.take(block);
        }
      }
    } catch {
      // aborted
    }
    this.ended = true;
    this.wake();
  }

  private take(block: string): void {
    let event = 'message';
    let id: string | null = null;
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) this.comments++;
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (data !== '') this.events.push({ event, id, data: JSON.parse(data) as unknown });
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  async next(pred: (e: SseEvent) => boolean, what: string, timeoutMs = 8000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.find(pred);
      if (hit !== undefined) return hit;
      if (this.ended) throw new Error(`stream ended before ${what}; got ${JSON.stringify(this.events)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms; got ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async untilEnded(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }

  close(): void {
    this.abort.abort();
  }
}

type Entry = { id: number; action: string; env: string | null; target: string | null; actor: string; detail: Record<string, unknown> | null };
const change = (action: string, target?: string) => (e: SseEvent) =>
  e.event === 'change' && (e.data as Entry).action === action && (target === undefined || (e.data as Entry).target === target);

let srv: ServerProcess;
const opened: Stream[] = [];

async function admin(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, token = BOOTSTRAP): Promise<Response> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${token}`, ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  return fetch(`${srv.adminUrl}/admin/v1/${path}`, init);
}

async function open(token = BOOTSTRAP, query = ''): Promise<Stream> {
  const { res, stream } = await Stream.open(srv.adminUrl!, token, query);
  expect(res.status, await (stream === null ? res.text() : Promise.resolve(''))).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  opened.push(stream!);
  await stream!.next((e) => e.event === 'ready', 'ready');
  return stream!;
}

beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--admin-max-streams', '3', '--stream-heartbeat-ms', '1000'] });
  for (const env of ['live', 'other']) expect((await admin('PUT', `environments/${env}`)).status).toBe(201);
}, 30_000);

afterAll(async () => {
  for (const s of opened) s.close();
  await srv?.dispose();
});

describe('the admin event stream', () => {
  it('needs the admin token, GET and well-formed environments', async () => {
    const none = await fetch(`${srv.adminUrl}/admin/v1/events`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    const wrong = await Stream.open(srv.adminUrl!, 'not-the-token-at-all');
    expect(wrong.res.status).toBe(401);
    const post = await admin('POST', 'events');
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    const bad = await Stream.open(srv.adminUrl!, BOOTSTRAP, '?env=bad%20env!');
    expect(bad.res.status).toBe(400);
    expect(((await bad.res.json()) as { error: { code: string } }).error.code).toBe('invalid_query');
  });

  it('sends each write as its audit entry, with the comment given, and heartbeats', async () => {
    const s = await open();
    const put = await admin('PUT', 'environments/live/content/Shop', '{"a":1}', { 'x-rcd-comment': encodeURIComponent('Halloween prices, für alle') });
    expect(put.status).toBe(200);
    const e = await s.next(change('content.put', 'Shop'), 'content.put');
    const entry = e.data as Entry;
    expect(entry).toMatchObject({ env: 'live', target: 'Shop' });
    expect(entry.actor).toMatch(/^token:/);
    expect(entry.detail).toMatchObject({ revision: 1, comment: 'Halloween prices, für alle' });
    expect(e.id).toBe(String(entry.id));
    // The audit log holds the same entry, comment included.
    const audit = (await (await admin('GET', 'audit?limit=5')).json()) as { entries: Entry[] };
    expect(audit.entries.find((a) => a.id === entry.id)?.detail).toMatchObject({ comment: 'Halloween prices, für alle' });
    await s.next(() => s.comments > 0, 'a heartbeat', 3000).catch(() => undefined);
    expect(s.comments).toBeGreaterThan(0);
    s.close();
  });

  it('sends a scheduled change created, then applied by the scheduler at its time', async () => {
    const s = await open(BOOTSTRAP, '?env=live');
    const at = new Date(Date.now() + 1500).toISOString();
    const made = await admin('POST', 'environments/live/schedules', { at, ops: [{ op: 'content.put', id: 'Shop', text: '{"a":2}' }] });
    expect(made.status).toBe(201);
    const sid = ((await made.json()) as { id: string }).id;
    await s.next(change('schedule.create', sid), 'schedule.create');
    const applied = await s.next((e) => change('content.put', 'Shop')(e) && ((e.data as Entry).detail?.schedule as { id?: string } | undefined)?.id === sid, 'the applied change', 10_000);
    expect((applied.data as Entry).detail).toMatchObject({ revision: 2 });
    // Another environment's changes do not reach a stream filtered to `live`.
    await admin('PUT', 'environments/other/content/Quiet', '{}');
    await admin('PUT', 'environments/live/content/Marker', '{}');
    await s.next(change('content.put', 'Marker'), 'the marker');
    expect(s.events.some(change('content.put', 'Quiet'))).toBe(false);
    s.close();
  });

  it('a scoped token hears its environments only, and its stream ends when it is revoked', async () => {
    const made = await admin('POST', 'tokens', { name: 'alice', role: 'editor', environments: ['live'] });
    expect(made.status).toBe(201);
    const { token } = (await made.json()) as { token: string };
    const s = await open(token);
    await admin('PUT', 'environments/other/content/Hidden', '{}');
    // A write of alice's own is audited under her name.
    expect((await admin('PUT', 'environments/live/content/Seen', '{}', { 'x-rcd-comment': 'by%20alice' }, token)).status).toBe(200);
    const seen = (await s.next(change('content.put', 'Seen'), 'her change')).data as Entry;
    expect(seen.actor).toBe('alice');
    expect(seen.detail).toMatchObject({ comment: 'by alice' });
    expect(s.events.some(change('content.put', 'Hidden'))).toBe(false);
    expect(s.events.some(change('token.create'))).toBe(false);
    expect((await admin('DELETE', 'tokens/alice')).status).toBe(200);
    await s.untilEnded(5000);
    expect(s.ended).toBe(true);
  });

  it('refuses more than --admin-max-streams open streams with 503 too_many_streams', async () => {
    const held = [await open(), await open(), await open()];
    const fourth = await Stream.open(srv.adminUrl!, BOOTSTRAP);
    expect(fourth.res.status).toBe(503);
    expect(fourth.res.headers.get('retry-after')).toBe('1');
    expect(((await fourth.res.json()) as { error: { code: string } }).error.code).toBe('too_many_streams');
    held[0]!.close();
    // The slot is free once the server sees the stream closed.
    let again = await Stream.open(srv.adminUrl!, BOOTSTRAP);
    for (let i = 0; i < 50 && again.res.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await Stream.open(srv.adminUrl!, BOOTSTRAP);
    }
    expect(again.res.status).toBe(200);
    again.stream!.close();
    for (const s of held) s.close();
  });

  it('hears a change another node of the store made (through the shared audit log)', async () => {
    const other = await startServer({ admin: true, store: srv.storeUrl });
    try {
      const s = await open(BOOTSTRAP, '?env=live');
      const res = await fetch(`${other.adminUrl}/admin/v1/environments/live/content/FromNodeB`, { method: 'PUT', headers: { authorization: `Bearer ${BOOTSTRAP}` }, body: '{}' });
      expect(res.status).toBe(200);
      await s.next(change('content.put', 'FromNodeB'), 'the other node\'s change', 5000);
      s.close();
    } finally {
      await other.dispose();
    }
  });

  it('validates the comment header of a write', async () => {
    const long = await admin('PUT', 'environments/live/content/Shop', '{"a":3}', { 'x-rcd-comment': 'x'.repeat(501) });
    expect(long.status).toBe(400);
    expect(((await long.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'invalid_request' });
    const broken = await admin('PUT', 'environments/live/content/Shop', '{"a":3}', { 'x-rcd-comment': '%E0%A4%A' });
    expect(broken.status).toBe(400);
    const control = await admin('PUT', 'environments/live/content/Shop', '{"a":3}', { 'x-rcd-comment': 'a%0Ab' });
    expect(control.status).toBe(400);
    // Nothing was written by the refused calls.
    const detail = (await (await admin('GET', 'environments/live/content/Shop')).json()) as { revisions: unknown[] };
    expect(detail.revisions).toHaveLength(2);
  });

  it('a graceful shutdown ends every open stream with a closing event, without waiting for it', async () => {
    const s = await open();
    const t0 = Date.now();
    const code = await srv.stop();
    expect(code).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    await s.untilEnded(2000);
    expect(s.ended).toBe(true);
    expect(s.events.some((e) => e.event === 'closing')).toBe(true);
  });
});

/**
 * A combine asked again is answered from a plan prepared by the first (src/delivery/combine-plan.ts).
 * What a client relies on, against the real server: the repeated answer is byte for byte the first
 * one and each entry is exactly the single endpoint's answer for that user; tags and 304s agree
 * between the two ways; an edit, a mapping change, another app version, a missing id and a gzip
 * client each get the right answer, never a stale plan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { decoded, rawCall, type RawReply } from '../helpers/http-raw.js';

const KEY = 'combine-plan-key-1';
const AUTH = { authorization: 'Bearer test-admin-token' };
const ENV = 'game';

const MAPPING = {
  rules: [
    { segment: 'whale', when: { spent: { $gte: 100 } }, patch: { offer: 'gold' } },
    { segment: 'ab', variants: [{ name: 'A', mod: [0, 499], patch: { color: 'red' } }, { name: 'B', mod: [500, 999], patch: { color: 'blue' } }] },
  ],
};

/** ~6 KB of JSON: above the compression threshold, so a gzip client gets a compressed combine. */
function big(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i < 120; i++) out[`slot${i}`] = { name: `Reward ${i}`, weight: (i * 31) % 97 };
  return out;
}

function bundle(): unknown {
  const content: Record<string, unknown> = {
    Shop: { json: { price: 10, color: 'grey' }, mapping: MAPPING },
    Levels: { revisions: [{ json: { level: 1 } }, { json: { level: 2 }, minAppVersion: '2.0.0' }] },
    Drops: { json: big() },
    Offers: { json: { color: 'grey', offer: 'none' }, mapping: MAPPING },
    // Another mapping: its combination differs from Shop's for every user (another rule, no A/B).
    Promo: { json: { banner: 'none' }, mapping: { rules: [{ segment: 'big', when: { spent: { $gte: 200 } }, patch: { banner: 'big' } }] } },
    // Behind a mapping and above the compression threshold: its front-cache entry has a gzip form.
    Rewards: { json: big(), mapping: MAPPING },
  };
  for (let i = 0; i < 8; i++) content[`Cfg${i}`] = { json: { i, name: `config ${i}` } };
  return { environments: { [ENV]: { keys: [KEY], content } } };
}

const IDS = ['Cfg0', 'Shop', 'Cfg1', 'Cfg2', 'Levels', 'Offers', 'Nope', 'Cfg3', 'Drops', 'Cfg4'];
const FOUND = IDS.filter((id) => id !== 'Nope');
const COMBINE = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(IDS));
const DYNAMIC = COMBINE + '&dynamic=true';
const SERIALIZED = DYNAMIC + '&responseType=serialized';

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServer({ dir: tempDir(), admin: true, bundle: bundle() });
});

afterAll(async () => {
  await srv?.dispose();
});

function ask(path: string, body: string, headers: Record<string, string> = {}): Promise<RawReply> {
  return rawCall(srv.url, path, { method: 'POST', key: KEY, body, headers });
}

function user(u: string, spent: number, v: string): string {
  return JSON.stringify({ u, p: { spent }, v });
}

async function adm(method: string, path: string, body?: string): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
}

/** The combine as the single endpoints answer its items for this user: what every entry must equal. */
async function fromSingles(body: string, dynamic: 'wrapped' | 'serialized' | null): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const id of FOUND) {
    const path = dynamic === null ? `/api/v1/config/${id}` : `/api/v1/config/${id}/dynamic${dynamic === 'serialized' ? '?responseType=serialized' : ''}`;
    const r = await ask(path, body);
    expect(r.status).toBe(200);
    out[id] = JSON.parse(r.wire.toString('utf8'));
  }
  return out;
}

/** Asks three times (the first builds the plan, the others are answered by it); all must agree. */
async function askRepeated(path: string, body: string, headers: Record<string, string> = {}): Promise<RawReply> {
  const first = await ask(path, body, headers);
  expect(first.status).toBe(200);
  for (let i = 0; i < 2; i++) {
    const again = await ask(path, body, headers);
    expect(again.status).toBe(200);
    expect(again.wire.equals(first.wire)).toBe(true);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.headers['x-missing-content']).toBe(first.headers['x-missing-content']);
    expect(again.headers['content-length']).toBe(String(again.wire.byteLength));
  }
  return first;
}

describe('combine answered from a plan', () => {
  it('repeats the first answer byte for byte, each entry the single endpoint answer, in query order', async () => {
    const users = [user('player-1', 0, '1.0.0'), user('player-2', 250, '1.0.0'), user('player-3', 5, '2.5.0'), user('player-44', 300, '2.5.0')];
    const tags = new Set<string>();
    for (const body of users) {
      for (const [path, kind] of [
        [COMBINE, null],
        [DYNAMIC, 'wrapped'],
        [SERIALIZED, 'serialized'],
      ] as const) {
        const r = await askRepeated(path, body);
        expect(r.headers['x-missing-content']).toBe('Nope');
        const answer = JSON.parse(r.wire.toString('utf8')) as Record<string, unknown>;
        expect(Object.keys(answer)).toEqual(FOUND);
        expect(answer).toEqual(await fromSingles(body, kind));
        tags.add(`${kind ?? 'plain'} ${String(r.headers.etag)}`);
      }
    }
    // Plain combines differ only by app version (two here); dynamic ones carry the uid: one tag each.
    expect(tags.size).toBe(2 + users.length * 2);
  });

  it('serves app versions interleaved, each with its own revisions, where versions that chose the same ones share a plan', async () => {
    // Levels has a revision from 2.0.0 on: 1.0.0 and 1.5.0 choose the first; 2.0.0, 2.5.0 and no version (the newest) the second.
    const versions = ['1.0.0', '2.0.0', '1.5.0', '2.5.0', '', '1.0.0', '2.5.0', '1.5.0'];
    const plainTags = new Map<string, string>();
    for (const v of versions) {
      const body = v === '' ? JSON.stringify({ u: 'player-v', p: { spent: 120 } }) : user('player-v', 120, v);
      const dynamic = await askRepeated(DYNAMIC, body);
      expect(JSON.parse(dynamic.wire.toString('utf8'))).toEqual(await fromSingles(body, 'wrapped'));
      const plain = await askRepeated(COMBINE, body);
      const answer = JSON.parse(plain.wire.toString('utf8')) as Record<string, { level: number }>;
      expect(answer.Levels!.level).toBe(v === '' || v >= '2.0.0' ? 2 : 1);
      plainTags.set(v, String(plain.headers.etag));
    }
    // The same revisions make the same answer and tag whichever version asked; the other revision another.
    expect(plainTags.get('1.5.0')).toBe(plainTags.get('1.0.0'));
    expect(plainTags.get('')).toBe(plainTags.get('2.0.0'));
    expect(plainTags.get('2.5.0')).toBe(plainTags.get('2.0.0'));
    expect(plainTags.get('2.0.0')).not.toBe(plainTags.get('1.0.0'));
  });

  it('writes every user\'s digits right whatever their length (the plan lays its bytes out per length)', async () => {
    // uids are uniform over uint32 and mod = uid % 1000: 40 users give uid and mod lengths beyond the
    // few a plan lays out, so both ways of writing a planned answer are taken.
    const lengths = new Set<number>();
    for (let i = 0; i < 40; i++) {
      const body = user(`length-${i}`, i * 10, '2.0.0');
      const r = await askRepeated(DYNAMIC, body);
      const answer = JSON.parse(r.wire.toString('utf8')) as Record<string, { meta: { uid: number; mod: number } }>;
      expect(answer).toEqual(await fromSingles(body, 'wrapped'));
      const meta = answer.Cfg0!.meta;
      lengths.add(`${meta.uid},"mod":${meta.mod}`.length);
    }
    expect(lengths.size).toBeGreaterThan(3);
  });

  it('answers 304 to the tag of either way, and 200 with the tag of the new answer after an edit', async () => {
    const body = user('player-9', 150, '2.0.0');
    const before = await askRepeated(DYNAMIC, body);
    const tag = String(before.headers.etag);
    const notModified = await ask(DYNAMIC, body, { 'if-none-match': tag });
    expect(notModified.status).toBe(304);
    expect(notModified.headers.etag).toBe(tag);

    await adm('PUT', `environments/${ENV}/content/Cfg3`, '{"i":3,"name":"config 3, edited"}');
    const after = await askRepeated(DYNAMIC, body);
    expect(after.headers.etag).not.toBe(tag);
    expect((JSON.parse(after.wire.toString('utf8')) as Record<string, { data: unknown }>).Cfg3!.data).toEqual({ i: 3, name: 'config 3, edited' });
    expect(JSON.parse(after.wire.toString('utf8'))).toEqual(await fromSingles(body, 'wrapped'));
    expect((await ask(DYNAMIC, body, { 'if-none-match': tag })).status).toBe(200);
    expect((await ask(DYNAMIC, body, { 'if-none-match': String(after.headers.etag) })).status).toBe(304);
  });

  it('keeps the tag of each combination of its mapped items: one mapped item, two, none; 304 to each', async () => {
    // Cfg2+Shop selects the combinations Cfg0+Shop+Cfg1 selected, for another plan (another tag). Shop
    // and Offers have mappings of the same rules (each its own combinations, the same tag parts); Shop
    // and Promo differ for every user.
    for (const ids of [['Cfg0', 'Shop', 'Cfg1'], ['Shop', 'Cfg5', 'Offers'], ['Cfg6', 'Cfg7'], ['Cfg2', 'Shop'], ['Shop', 'Promo', 'Cfg5']]) {
      const path = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(ids)) + '&dynamic=true';
      // An order that moves between combinations (whale or not, variant A or B) and comes back.
      const users = ['a-1', 'a-2', 'a-3', 'a-1', 'a-4', 'a-2'].map((u, i) => user(u, i % 2 === 0 ? 0 : 500, '1.0.0'));
      const seen = new Map<string, string>();
      for (const body of users) {
        const r = await askRepeated(path, body);
        const tag = String(r.headers.etag);
        const uid = (JSON.parse(r.wire.toString('utf8')) as Record<string, { meta: { uid: number } }>)[ids[0]!]!.meta.uid;
        expect(tag.endsWith(`.${uid}"`)).toBe(true);
        expect(tag).toBe(seen.get(body) ?? tag);
        seen.set(body, tag);
        const notModified = await ask(path, body, { 'if-none-match': tag });
        expect(notModified.status).toBe(304);
        expect(notModified.headers.etag).toBe(tag);
      }
      // One tag per user, and the two answers of a-1 differ where a mapped item's combination does.
      expect(new Set(seen.values()).size).toBe(ids.includes('Shop') ? 5 : 4);
    }
  });

  it('follows a mapping change, a deleted item and a new item on the very next request', async () => {
    const body = user('player-12', 0, '2.0.0');
    await askRepeated(DYNAMIC, body);
    await adm('PUT', `environments/${ENV}/content/Shop/mapping`, JSON.stringify({ rules: [{ segment: 'all', when: {}, patch: { price: 1 } }] }));
    const mappedNow = JSON.parse((await askRepeated(DYNAMIC, body)).wire.toString('utf8')) as Record<string, { data: { price: number } }>;
    expect(mappedNow.Shop!.data.price).toBe(1);
    expect(mappedNow).toEqual(await fromSingles(body, 'wrapped'));

    await adm('DELETE', `environments/${ENV}/content/Cfg1`);
    const gone = await askRepeated(DYNAMIC, body);
    expect(gone.headers['x-missing-content']).toBe('Cfg1,Nope');
    expect(Object.keys(JSON.parse(gone.wire.toString('utf8')) as object)).not.toContain('Cfg1');

    await adm('PUT', `environments/${ENV}/content/Nope`, '{"now":"here"}');
    await adm('PUT', `environments/${ENV}/content/Cfg1`, '{"i":1}');
    const back = await askRepeated(DYNAMIC, body);
    expect(back.headers['x-missing-content']).toBeUndefined();
    expect(Object.keys(JSON.parse(back.wire.toString('utf8')) as object)).toEqual(IDS);
  });

  it('answers a gzip client compressed when a mapped item has a gzip form, also after identity answers kept its heads', async () => {
    const path = '/api/v1/combine?c=' + encodeURIComponent(JSON.stringify(['Cfg0', 'Rewards'])) + '&dynamic=true';
    const users = [user('gz-1', 0, '1.0.0'), user('gz-2', 0, '1.0.0'), user('gz-1', 0, '1.0.0')];
    for (const body of users) {
      // Identity answers from the plan (the mapped item's head kept for its combination), then gzip.
      const identity = await askRepeated(path, body);
      const gz = await ask(path, body, { 'accept-encoding': 'gzip' });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(decoded(gz).equals(identity.wire)).toBe(true);
      expect(gz.headers.etag).toBe(String(identity.headers.etag).replace(/"$/, '.gz"'));
      const answer = JSON.parse(identity.wire.toString('utf8')) as Record<string, { data: Record<string, unknown> }>;
      expect(Object.keys(answer.Rewards!.data)).toHaveLength(120 + 1);
    }
  });

  it('sends a gzip client the same answer compressed, before and after the plan exists', async () => {
    const body = user('player-20', 120, '2.0.0');
    const identity = await askRepeated(DYNAMIC, body);
    const gz = await ask(DYNAMIC, body, { 'accept-encoding': 'gzip' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(decoded(gz).equals(identity.wire)).toBe(true);
    expect(gz.headers.etag).toBe(String(identity.headers.etag).replace(/"$/, '.gz"'));
    const gzAgain = await ask(DYNAMIC, body, { 'accept-encoding': 'gzip' });
    expect(decoded(gzAgain).equals(identity.wire)).toBe(true);
  });
});

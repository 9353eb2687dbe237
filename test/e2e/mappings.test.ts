/**
 * Dynamic mappings through the real server: segments, sticky A/B variants, app-version rules,
 * serialized and combine responses, the catalog's d flag, and refusal of a bad mapping at import.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contentHash, userMod, userUid } from '../../src/shared/identity.js';
import { BIN, call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const BASE = { difficulty: 'normal', shop: { discount: 0, items: ['a', 'b'] }, theme: 'light' };
const MAPPING = {
  rules: [
    { segment: 'vip', when: { tier: 'gold' }, patch: { shop: { discount: 20 } }, info: 'gold tier' },
    {
      segment: 'theme-test',
      info: 'rule info',
      variants: [
        { name: 'A', mod: [0, 499], patch: { theme: 'dark' } },
        { name: 'B', mod: [500, 999], patch: [{ op: 'replace', path: '/theme', value: 'blue' }], info: 'variant info' },
      ],
    },
    { segment: 'new-app', appVersion: '>=2.0.0', when: { 'device.os': { $in: ['ios', 'android'] } }, patch: { shop: { items: ['c'] } } },
  ],
};
const KEY = 'mapping-key-1';
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Game: { json: BASE, mapping: MAPPING },
        Plain: { json: { x: 1 } },
      },
    },
  },
};

/** The first generated user id whose mod falls in [lo, hi]. */
function userIn(lo: number, hi: number): string {
  for (let i = 0; ; i++) {
    const u = `user-${i}`;
    const mod = userMod(userUid(u));
    if (mod >= lo && mod <= hi) return u;
  }
}
const userA = userIn(0, 499);
const userB = userIn(500, 999);

interface Wrapped {
  data: unknown;
  hash: string;
  meta: { uid: number; mod: number; seg: { n: string; v: string | null; i?: string }[] };
}

let server: ServerProcess;
const dir = tempDir();
beforeAll(async () => {
  server = await startServer({ dir, bundle: BUNDLE });
});
afterAll(async () => {
  await server?.dispose();
});

const wrapped = async (body: unknown, query = ''): Promise<Wrapped> => {
  const r = await call(server.url, `/api/v1/config/Game/dynamic${query}`, { key: KEY, body: JSON.stringify(body) });
  expect(r.status).toBe(200);
  return r.json as Wrapped;
};

describe('mutations on the wrapped path', () => {
  it('applies only the A/B rule for a plain user in group A', async () => {
    const r = await wrapped({ u: userA, p: { tier: 'silver' } });
    expect(r.data).toEqual({ ...BASE, theme: 'dark' });
    expect(r.meta.seg).toEqual([{ n: 'theme-test', v: 'A', i: 'rule info' }]);
  });

  it('applies every matching rule in order; the variant info wins over the rule info', async () => {
    const r = await wrapped({ u: userB, p: { tier: 'gold', device: { os: 'ios' } }, v: '2.1.0' });
    expect(r.data).toEqual({ difficulty: 'normal', shop: { discount: 20, items: ['c'] }, theme: 'blue' });
    expect(r.meta.seg).toEqual([
      { n: 'vip', v: null, i: 'gold tier' },
      { n: 'theme-test', v: 'B', i: 'variant info' },
      { n: 'new-app', v: null },
    ]);
  });

  it('needs v to match an appVersion rule', async () => {
    const r = await wrapped({ u: userB, p: { device: { os: 'ios' } } });
    expect(r.meta.seg.map((s) => s.n)).toEqual(['theme-test']);
    const old = await wrapped({ u: userB, p: { device: { os: 'ios' } }, v: '1.9.9' });
    expect(old.meta.seg.map((s) => s.n)).toEqual(['theme-test']);
  });

  it('keeps hash = the base revision hash whatever the mutations', async () => {
    const a = await wrapped({ u: userA });
    const b = await wrapped({ u: userB, p: { tier: 'gold' } });
    expect(a.hash).toBe(contentHash(JSON.stringify(BASE)));
    expect(b.hash).toBe(a.hash);
  });

  it('serialized data is the mutated JSON as a string; meta unchanged', async () => {
    const body = { u: userB, p: { tier: 'gold' } };
    const plain = await wrapped(body);
    const ser = await wrapped(body, '?responseType=serialized');
    expect(typeof ser.data).toBe('string');
    expect(JSON.parse(ser.data as string)).toEqual(plain.data);
    expect(ser.meta).toEqual(plain.meta);
  });

  it('plain delivery gets the revision without mutations', async () => {
    const r = await call(server.url, '/api/v1/config/Game', { key: KEY, body: JSON.stringify({ u: userA, p: { tier: 'gold' } }) });
    expect(r.json).toEqual(BASE);
  });

  it('does not treat a "__proto__" key in p as an attribute of the user', async () => {
    const r = await wrapped({ u: userA, p: JSON.parse('{"__proto__":{"tier":"gold"}}') as unknown });
    expect(r.meta.seg.map((s) => s.n)).toEqual(['theme-test']);
    expect((r.data as { shop: { discount: number } }).shop.discount).toBe(0);
  });

  it('is sticky: the same u gets the same variant on every request', async () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) seen.add(JSON.stringify((await wrapped({ u: userB, p: { n: i } })).meta.seg));
    expect(seen.size).toBe(1);
  });
});

describe('combine and catalog with mappings', () => {
  it('each dynamic combine entry equals the single response', async () => {
    const body = JSON.stringify({ u: userB, p: { tier: 'gold' }, v: '3.0.0' });
    for (const extra of ['&dynamic=true', '&dynamic=true&responseType=serialized', '']) {
      const c = encodeURIComponent(JSON.stringify(['Game', 'plain']));
      const r = await call(server.url, `/api/v1/combine?c=${c}${extra}`, { key: KEY, body });
      const single = extra === '' ? '' : extra.includes('serialized') ? '/dynamic?responseType=serialized' : '/dynamic';
      for (const id of ['Game', 'plain']) {
        const one = await call(server.url, `/api/v1/config/${id}${single}`, { key: KEY, body });
        expect(JSON.stringify((r.json as Record<string, unknown>)[id])).toBe(one.text);
      }
    }
  });

  it('marks content with a mapping as d: true in the catalog', async () => {
    const r = await call(server.url, '/api/v1/env/catalog', { key: KEY, method: 'GET' });
    const catalog = (r.json as { catalog: Record<string, { d: boolean }> }).catalog;
    expect(catalog.Game!.d).toBe(true);
    expect(catalog.Plain!.d).toBe(false);
  });
});

describe('stickiness across restarts, and refusal of a bad mapping', () => {
  it('gives the same variants after a restart', async () => {
    const before = await wrapped({ u: userA });
    await server.stop();
    server = await startServer({ dir });
    const after = await wrapped({ u: userA });
    expect(after).toEqual(before);
  });

  it('refuses a bundle whose mapping is invalid and stores nothing', () => {
    const bad = structuredClone(BUNDLE) as typeof BUNDLE & { environments: Record<string, unknown> };
    bad.environments.other = {
      keys: ['other-key-1'],
      content: { X: { json: { a: 1 }, mapping: { rules: [{ segment: 's', when: { a: { $bogus: 1 } }, patch: { a: 2 } }] } } },
    };
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify(bad));
    const store = `sqlite:${join(dir, 'other.db')}`;
    const r = spawnSync(process.execPath, [BIN, 'import', file, '--store', store], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('invalid_bundle');
    const exported = spawnSync(process.execPath, [BIN, 'export', '--store', store], { encoding: 'utf8' });
    expect(exported.status).toBe(0);
    expect((JSON.parse(exported.stdout) as { environments: object }).environments).toEqual({});
  });
});

/**
 * Resolving render jobs against a real SQLite store, read through the worker's own revision reader:
 * what a worker hands back to the front end for each job kind, and the failures it reports.
 */
import Database from 'better-sqlite3';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { Piscina } from 'piscina';
import { afterEach, describe, expect, it } from 'vitest';
import { RcdError } from '../../../src/runtime/errors.js';
import { compileMapping, evaluateMapping } from '../../../src/mapping/index.js';
import { JobKind, type BatchResult, type Job, type JobResult } from '../../../src/pool/protocol.js';
import { openRevisionReader, openStore, type RevisionReader, type Store } from '../../../src/store/index.js';
import { NO_VERSION, comparableVersion } from '../../../src/shared/app-version.js';
import { createCache, type RevisionEntry } from '../../../src/worker/content-cache.js';
import { resolveJob, type WorkerState } from '../../../src/worker/resolve.js';
import { tempDir } from '../store/helpers.js';

const TEXT_V1 = '{\n  // the shop\n  "shop": {"currency": "USD", "title": "Ünïcødé 日本"},\n  "ads": true\n}';
const TEXT_V2 = '{"shop":{"currency":"USD","title":"Ünïcødé 日本","price":10},"ads":true}';

const MAPPING = {
  rules: [
    { segment: 'de', when: { country: 'DE' }, patch: { shop: { currency: 'EUR' } }, info: 'germany' },
    { segment: 'new-price', appVersion: '>=2.0.0', patch: [{ op: 'replace', path: '/shop/price', value: 12 }] },
    {
      segment: 'ads-test',
      variants: [
        { name: 'off', mod: [0, 499], patch: { ads: false } },
        { name: 'on', mod: [500, 999], patch: {} },
      ],
    },
  ],
};

interface Seeded {
  store: Store;
  v1: number;
  v2: number;
  hash1: string;
  hash2: string;
  mappingId: number;
}

const opened: { close(): unknown }[] = [];
const cleanups: (() => void)[] = [];
afterEach(async () => {
  for (const o of opened.splice(0)) await o.close();
  for (const c of cleanups.splice(0)) c();
});

async function seed(url = 'memory:'): Promise<Seeded> {
  const store = await openStore(url);
  opened.push(store);
  await store.putEnvironment('e');
  const r1 = await store.putContent('e', 'Shop', TEXT_V1, null);
  const r2 = await store.putContent('e', 'Shop', TEXT_V2, '2.0.0');
  const { mappingId } = await store.putMapping('e', 'Shop', MAPPING);
  const revisions = (await store.loadDirectory()).contents[0]!.revisions;
  return { store, v1: revisions[0]!.revId, v2: revisions[1]!.revId, hash1: r1.hash, hash2: r2.hash, mappingId };
}

function workerState(store: Store): WorkerState & { reader: RevisionReader } {
  const reader = openRevisionReader(store.readerUrl);
  opened.push(reader);
  return { reader, cache: createCache(64 * 1024 * 1024), compressMinBytes: 1024 };
}

function job(kind: JobKind, revId: number, mappingId = 0, comboKey = ''): Job {
  return { kind, revId, mappingId, comboKey };
}

/** The front end's side: the combination key of (p, v, mod), from its own compilation of the mapping. */
const frontMapping = compileMapping(MAPPING);
function comboKey(p: Record<string, unknown>, v: string, mod: number): string {
  return evaluateMapping(frontMapping, p, v === '' ? NO_VERSION : comparableVersion(v), mod).key;
}

function text(result: JobResult): string {
  expect(result.error).toBe('');
  expect(result.head).toBeInstanceOf(ArrayBuffer);
  return Buffer.from(result.head!).toString('utf8');
}

/** The answer the front end sends: head, then the user's tail (see http/tail.ts). */
function wrappedAnswer(result: JobResult, uid: number, mod: number): unknown {
  return JSON.parse(`${text(result)}${uid},"mod":${mod},"seg":${result.seg}}}`) as unknown;
}

const V1_DATA = { shop: { currency: 'USD', title: 'Ünïcødé 日本' }, ads: true };
const V2_DATA = { shop: { currency: 'USD', title: 'Ünïcødé 日本', price: 10 }, ads: true };

describe('resolveJob', () => {
  it('plain: the stored minified JSON, no seg', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const result = resolveJob(state, job(JobKind.Plain, s.v1));
    expect(text(result)).toBe(JSON.stringify(V1_DATA));
    expect(result.seg).toBe('');
    expect(resolveJob(state, job(JobKind.Plain, s.v2)).head!.byteLength).toBe(Buffer.byteLength(JSON.stringify(V2_DATA)));
  });

  it('wrapped without a mapping or with no rule applied: base data, the revision hash, seg []', async () => {
    const s = await seed();
    const state = workerState(s.store);
    for (const j of [job(JobKind.Wrapped, s.v2), job(JobKind.Wrapped, s.v2, s.mappingId, '')]) {
      const result = resolveJob(state, j);
      expect(text(result).startsWith('{"data":')).toBe(true);
      expect(text(result).endsWith(`,"hash":"${s.hash2}","meta":{"uid":`)).toBe(true);
      expect(result.seg).toBe('[]');
      expect(wrappedAnswer(result, 42, 42)).toEqual({ data: V2_DATA, hash: s.hash2, meta: { uid: 42, mod: 42, seg: [] } });
    }
  });

  it('wrapped with the rules the front end chose: patched data, their seg, the base hash', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const key = comboKey({ country: 'DE' }, '2.1.0', 10);
    expect(key).toBe('0.-1;1.-1;2.0;');
    const result = resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, key));
    expect(wrappedAnswer(result, 7010, 10)).toEqual({
      data: { shop: { currency: 'EUR', title: 'Ünïcødé 日本', price: 12 }, ads: false },
      hash: s.hash2,
      meta: {
        uid: 7010,
        mod: 10,
        seg: [
          { n: 'de', v: null, i: 'germany' },
          { n: 'new-price', v: null },
          { n: 'ads-test', v: 'off' },
        ],
      },
    });
  });

  it('serialized: data is the (patched) minified JSON text as a JSON string; hash and seg as wrapped', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const plain = resolveJob(state, job(JobKind.Serialized, s.v2));
    expect(wrappedAnswer(plain, 1, 1)).toEqual({ data: JSON.stringify(V2_DATA), hash: s.hash2, meta: { uid: 1, mod: 1, seg: [] } });
    const key = comboKey({ country: 'DE' }, '', 600);
    const patched = resolveJob(state, job(JobKind.Serialized, s.v2, s.mappingId, key));
    const wrapped = resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, key));
    const answer = wrappedAnswer(patched, 5, 600) as { data: string; hash: string; meta: unknown };
    expect(typeof answer.data).toBe('string');
    expect(answer.data).toBe(JSON.stringify((wrappedAnswer(wrapped, 5, 600) as { data: unknown }).data));
    expect(JSON.parse(answer.data)).toEqual({ ...V2_DATA, shop: { ...V2_DATA.shop, currency: 'EUR' } });
    expect(patched.seg).toBe(wrapped.seg);
    expect(answer.hash).toBe(s.hash2);
  });

  it('an older revision: a JSON Patch that does not apply to it is dropped from data and seg', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const key = comboKey({ country: 'DE' }, '2.0.0', 999);
    expect(key).toBe('0.-1;1.-1;2.1;');
    const result = resolveJob(state, job(JobKind.Wrapped, s.v1, s.mappingId, key));
    expect(wrappedAnswer(result, 3, 999)).toEqual({
      data: { shop: { currency: 'EUR', title: 'Ünïcødé 日本' }, ads: true },
      hash: s.hash1,
      meta: { uid: 3, mod: 999, seg: [{ n: 'de', v: null, i: 'germany' }, { n: 'ads-test', v: 'on' }] },
    });
    // The same combination on the newest revision keeps every rule.
    expect(JSON.parse(resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, key)).seg)).toHaveLength(3);
  });

  it('every head is an ArrayBuffer of its own: moving it to another thread leaves the worker\'s cache intact', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const key = comboKey({ country: 'DE' }, '', 0);
    const jobs = [job(JobKind.Plain, s.v2), job(JobKind.Wrapped, s.v2), job(JobKind.Wrapped, s.v2, s.mappingId, key), job(JobKind.Serialized, s.v2, s.mappingId, key)];
    for (const j of jobs) {
      const first = resolveJob(state, j);
      const expected = text(first);
      expect(first.head!.byteLength).toBe(Buffer.byteLength(expected));
      // What the batch does with every head: transfer it (the sender's ArrayBuffer is detached).
      const moved = structuredClone(first.head!, { transfer: [first.head!] });
      expect(first.head!.byteLength).toBe(0);
      expect(Buffer.from(moved).toString('utf8')).toBe(expected);
      expect(text(resolveJob(state, j))).toBe(expected);
    }
  });

  it('a revision that is not in the store (deleted content) is content_not_found, head null', async () => {
    const s = await seed();
    const state = workerState(s.store);
    expect(resolveJob(state, job(JobKind.Wrapped, s.v2 + 1000))).toEqual({ head: null, seg: '', gzip: null, br: null, error: 'content_not_found' });
    await s.store.deleteContent('e', 'Shop');
    for (const kind of [JobKind.Plain, JobKind.Wrapped, JobKind.Serialized]) {
      expect(resolveJob(state, job(kind, s.v1))).toEqual({ head: null, seg: '', gzip: null, br: null, error: 'content_not_found' });
    }
  });

  it('a mapping that is not in the store is content_not_found for a job that names rules', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const key = comboKey({ country: 'DE' }, '', 0);
    expect(resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId + 1000, key))).toEqual({ head: null, seg: '', gzip: null, br: null, error: 'content_not_found' });
    // The revision already held by this worker, the mapping gone with its content.
    const warm = workerState(s.store);
    expect(resolveJob(warm, job(JobKind.Plain, s.v2)).error).toBe('');
    await s.store.deleteContent('e', 'Shop');
    expect(resolveJob(warm, job(JobKind.Wrapped, s.v2, s.mappingId, key))).toEqual({ head: null, seg: '', gzip: null, br: null, error: 'content_not_found' });
  });

  it('a mapping replaced or removed since the job was made is still read by its id (ids are immutable)', async () => {
    const s = await seed();
    const key = comboKey({ country: 'DE' }, '', 0);
    const before = text(resolveJob(workerState(s.store), job(JobKind.Wrapped, s.v2, s.mappingId, key)));
    await s.store.putMapping('e', 'Shop', { rules: [{ segment: 'other', patch: { ads: 'x' } }] });
    expect(text(resolveJob(workerState(s.store), job(JobKind.Wrapped, s.v2, s.mappingId, key)))).toBe(before);
    await s.store.deleteMapping('e', 'Shop');
    expect(text(resolveJob(workerState(s.store), job(JobKind.Wrapped, s.v2, s.mappingId, key)))).toBe(before);
  });

  it('the cache is reused: revisions and mappings are read and prepared once per worker', async () => {
    const s = await seed();
    const state = workerState(s.store);
    const key = comboKey({ country: 'DE' }, '', 0);
    const before = text(resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, key)));
    const revisions = [...state.cache.values()].filter((v): v is RevisionEntry => 'minified' in v);
    expect(revisions).toHaveLength(1);
    const doc = revisions[0]!.doc;
    expect(doc).not.toBeNull();
    // Gone from the store, still served from what this worker already holds (ids are immutable).
    await s.store.deleteContent('e', 'Shop');
    expect(text(resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, key)))).toBe(before);
    expect(text(resolveJob(state, job(JobKind.Plain, s.v2)))).toBe(JSON.stringify(V2_DATA));
    expect(revisions[0]!.doc).toBe(doc);
    expect(state.cache.size).toBe(2);
    // A worker without those entries reads the store and finds nothing.
    expect(resolveJob(workerState(s.store), job(JobKind.Plain, s.v2)).error).toBe('content_not_found');
  });

  it('a stored mapping that no longer compiles (store edited by hand) throws invalid_mapping for jobs that name rules only', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, 'rcd.db');
    const s = await seed(`sqlite:${path}`);
    const edit = new Database(path);
    edit.prepare('UPDATE mappings SET json = ? WHERE mapping_id = ?').run('{"rules":[{"segment":"x","patch":{},"bogus":1}]}', s.mappingId);
    edit.close();
    const state = workerState(s.store);
    let caught: unknown = null;
    try {
      resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, '0.-1;'));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(RcdError);
    expect((caught as RcdError).code).toBe('invalid_mapping');
    // Jobs that need no rules are unaffected.
    expect(text(resolveJob(state, job(JobKind.Wrapped, s.v2, s.mappingId, '')))).toContain('"data":');
    expect(text(resolveJob(state, job(JobKind.Plain, s.v2)))).toBe(JSON.stringify(V2_DATA));
  });
});

describe('a batch in the real worker (compiled worker entry in a Piscina pool)', () => {
  const dist = process.env.RCD_TEST_DIST ?? fileURLToPath(new URL('../../../dist', import.meta.url));

  it('a job that throws answers internal; its neighbours in the batch are answered', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const path = join(dir, 'rcd.db');
    const s = await seed(`sqlite:${path}`);
    const edit = new Database(path);
    edit.prepare('UPDATE mappings SET json = ? WHERE mapping_id = ?').run('not json', s.mappingId);
    edit.close();
    const pool = new Piscina({
      filename: pathToFileURL(`${dist}/src/worker/entry.js`).href,
      minThreads: 1,
      maxThreads: 1,
      workerData: { storeUrl: s.store.readerUrl, cacheBytes: 16 * 1024 * 1024, holdYoungGeneration: false },
    });
    try {
      const batch = {
        jobs: [job(JobKind.Plain, s.v2), job(JobKind.Wrapped, s.v2, s.mappingId, '0.-1;'), job(JobKind.Wrapped, s.v2 + 1000), job(JobKind.Wrapped, s.v1)],
      };
      const { results } = (await pool.run(batch)) as BatchResult;
      expect(results.map((r) => r.error)).toEqual(['', 'internal', 'content_not_found', '']);
      expect(Buffer.from(results[0]!.head!).toString('utf8')).toBe(JSON.stringify(V2_DATA));
      expect(results[1]!.head).toBeNull();
      expect(wrappedAnswer(results[3]!, 0, 0)).toEqual({ data: V1_DATA, hash: s.hash1, meta: { uid: 0, mod: 0, seg: [] } });
    } finally {
      await pool.destroy();
    }
  });
});

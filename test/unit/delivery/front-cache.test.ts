import { NO_VERSION } from '../../../src/shared/app-version.js';
import { describe, expect, it } from 'vitest';
import { createFrontCache, frontEntryOf, frontKey, frontKeyOf, keepEntry, newRendered, pathEntryOf, rememberPathEntry, type FrontCache, type FrontKey, type Rendered } from '../../../src/delivery/front-cache.js';
import { EMPTY_BYTES } from '../../../src/delivery/wire/tail.js';
import { compileMapping, evaluateMapping, evaluatePath, newRulePath, rememberIn, type Combination, type FrontKeyMemo } from '../../../src/mapping/index.js';
import { JobKind } from '../../../src/pool/protocol.js';

const MAPPING = {
  rules: [
    { segment: 'eu', when: { country: 'DE' }, patch: { shop: { discount: 5 } } },
    {
      segment: 'banner-test',
      variants: [
        { name: 'A', mod: [0, 499], patch: { shop: { banner: 'A' } } },
        { name: 'B', mod: [500, 999], patch: { shop: { banner: 'B' } } },
      ],
    },
  ],
};

describe('front cache keys', () => {
  it('are one string per (kind, revision[, mapping, combination]): answers that differ never share a key', () => {
    const keys = [
      frontKey(JobKind.Plain, 7, 0, ''),
      frontKey(JobKind.Wrapped, 7, 0, ''),
      frontKey(JobKind.Serialized, 7, 0, ''),
      frontKey(JobKind.Wrapped, 8, 0, ''),
      frontKey(JobKind.Wrapped, 7, 3, '0.-1;'),
      frontKey(JobKind.Wrapped, 7, 4, '0.-1;'),
      frontKey(JobKind.Wrapped, 7, 3, '0.-1;1.0;'),
      frontKey(JobKind.Serialized, 7, 3, '0.-1;'),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    // A plain answer does not depend on the mapping; no applied rule means the base answer.
    expect(frontKey(JobKind.Plain, 7, 3, '0.-1;')).toBe(frontKey(JobKind.Plain, 7, 0, ''));
    expect(frontKey(JobKind.Wrapped, 7, 3, '')).toBe(frontKey(JobKind.Wrapped, 7, 0, ''));
  });

  it('memoized on the interned combination: the same string as frontKey, rebuilt when revision, kind or mapping change', () => {
    const mapping = compileMapping(MAPPING);
    const de = evaluateMapping(mapping, { country: 'DE' }, NO_VERSION, 600);
    const first = frontKeyOf(JobKind.Wrapped, 7, 3, de);
    expect(first).toBe(frontKey(JobKind.Wrapped, 7, 3, de.key));
    // Another request selecting the same combination gets the very same key.
    const again = evaluateMapping(mapping, { country: 'DE', level: 2 }, NO_VERSION, 999);
    expect(again).toBe(de);
    expect(frontKeyOf(JobKind.Wrapped, 7, 3, again)).toBe(first);
    for (const [kind, rev, mappingId] of [
      [JobKind.Wrapped, 8, 3],
      [JobKind.Serialized, 8, 3],
      [JobKind.Serialized, 8, 4],
      [JobKind.Wrapped, 7, 3],
    ] as const) {
      expect(frontKeyOf(kind, rev, mappingId, de)).toBe(frontKey(kind, rev, mappingId, de.key));
    }
    // The shared empty combination (no rule applied) stays correct across contents too.
    const none = evaluateMapping(mapping, { country: 'FR' }, NO_VERSION, 600);
    const other = evaluateMapping(compileMapping({ rules: [MAPPING.rules[0]] }), {}, NO_VERSION, 0);
    expect(none.key).toBe('1.1;');
    expect(other.key).toBe('');
    expect(frontKeyOf(JobKind.Wrapped, 9, 5, other)).toBe(frontKey(JobKind.Wrapped, 9, 0, ''));
    expect(frontKeyOf(JobKind.Wrapped, 10, 6, other)).toBe(frontKey(JobKind.Wrapped, 10, 0, ''));
    // No rules evaluated (plain answers, content without a mapping): the mapping is not in the key.
    expect(frontKeyOf(JobKind.Plain, 7, 3, null)).toBe(frontKey(JobKind.Plain, 7, 0, ''));
    expect(frontKeyOf(JobKind.Wrapped, 7, 3, null)).toBe(frontKey(JobKind.Wrapped, 7, 0, ''));
  });

  it('one combination serving items of many revisions (a combine): each key right, past the memo too', () => {
    const de = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, NO_VERSION, 600);
    for (let pass = 0; pass < 3; pass++) {
      for (let rev = 1; rev <= 20; rev++) {
        for (const kind of [JobKind.Wrapped, JobKind.Serialized]) expect(frontKeyOf(kind, rev, 3, de)).toBe(frontKey(kind, rev, 3, de.key));
      }
    }
  });

  it('a combination memo keeps the newest entries up to its capacity, the oldest replaced first (rememberIn)', () => {
    const memo: number[] = [];
    let next = 0;
    for (let n = 1; n <= 7; n++) next = rememberIn(memo, n, 3, next);
    // 1, 2, 3 appended; 4 over 1, 5 over 2, 6 over 3, 7 over 4.
    expect(memo).toEqual([7, 5, 6]);
    expect(next).toBe(1);
  });
});

describe('front-cache entries found on their key memo (frontEntryOf)', () => {
  // Entries of 1,000 head bytes; a cache that holds three of them.
  const entryOf = (fill: number): Rendered => newRendered(new Uint8Array(1000).fill(fill), EMPTY_BYTES, null, null, null);
  const cacheOfThree = (): FrontCache => {
    const size = entryOf(0);
    const cache = createFrontCache(1 << 30);
    cache.set('probe', size);
    const bytes = cache.calculatedSize;
    cache.clear();
    return createFrontCache(bytes * 3);
  };
  const memoOf = (c: Combination, key: FrontKey): FrontKeyMemo => c.cacheKeys.find((m) => m.key === key)!;

  it('finds the entry the cache holds, and nothing once the cache evicted it (the memo lets it go)', () => {
    const cache = cacheOfThree();
    const de = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, NO_VERSION, 600);
    const key = frontKeyOf(JobKind.Wrapped, 7, 3, de);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, de)).toBeUndefined();
    const entry = entryOf(1);
    keepEntry(cache, key, entry);
    for (let i = 0; i < 40; i++) expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, de)).toBe(entry);
    expect(memoOf(de, key).entry).toBe(entry);
    for (let n = 0; n < 3; n++) keepEntry(cache, `other${n}`, entryOf(2));
    expect(cache.has(key)).toBe(false);
    expect(memoOf(de, key).entry).toBeNull();
    expect(entry.memo).toBeNull();
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, de)).toBeUndefined();
    // Rendered again (a pool job) and cached: found again.
    const again = entryOf(3);
    keepEntry(cache, key, again);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, de)).toBe(again);
  });

  it('an entry answered through its memo stays recent in the cache: an entry not used since is evicted first', () => {
    const cache = cacheOfThree();
    const de = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, NO_VERSION, 600);
    const key = frontKeyOf(JobKind.Wrapped, 7, 3, de);
    keepEntry(cache, key, entryOf(1));
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, de)).toBeDefined();
    cache.set('b', entryOf(2));
    cache.set('c', entryOf(3));
    // Answered often from the memo after b and c were cached: the cache sees it used again.
    for (let i = 0; i < 16; i++) frontEntryOf(cache, JobKind.Wrapped, 7, 3, de);
    cache.set('d', entryOf(4));
    expect(cache.has(key)).toBe(true);
    expect(cache.has('b')).toBe(false);
  });

  it('two combination objects of one key (a mapping compiled twice): the entry is on one memo at a time, on none once evicted', () => {
    const cache = cacheOfThree();
    const one = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, NO_VERSION, 600);
    const two = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, NO_VERSION, 600);
    expect(two).not.toBe(one);
    const key = frontKeyOf(JobKind.Wrapped, 7, 3, one);
    expect(frontKeyOf(JobKind.Wrapped, 7, 3, two)).toBe(key);
    const entry = entryOf(1);
    keepEntry(cache, key, entry);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, one)).toBe(entry);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, two)).toBe(entry);
    expect(memoOf(one, key).entry).toBeNull();
    expect(memoOf(two, key).entry).toBe(entry);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, one)).toBe(entry);
    cache.delete(key);
    expect(memoOf(one, key).entry).toBeNull();
    expect(memoOf(two, key).entry).toBeNull();
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, two)).toBeUndefined();
  });

  it('items without a combination key: found in their slot while the cache holds them, each cache its own', () => {
    const cache = cacheOfThree();
    const key = frontKey(JobKind.Wrapped, 7, 0, '');
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, null)).toBeUndefined();
    const entry = entryOf(1);
    keepEntry(cache, key, entry);
    for (let i = 0; i < 40; i++) expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, null)).toBe(entry);
    expect(entry.memo).toBeNull();
    // Another cache in the same thread (tests; a thread runs one loop) never answers with this one's entry.
    const other = cacheOfThree();
    expect(frontEntryOf(other, JobKind.Wrapped, 7, 3, null)).toBeUndefined();
    const theirs = entryOf(2);
    keepEntry(other, key, theirs);
    expect(frontEntryOf(other, JobKind.Wrapped, 7, 3, null)).toBe(theirs);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, null)).toBe(entry);
    // Another kind of the same revision is another key.
    expect(frontEntryOf(cache, JobKind.Plain, 7, 3, null)).toBeUndefined();
    // Evicted: found no more.
    for (let n = 0; n < 3; n++) keepEntry(cache, `other${n}`, entryOf(3));
    expect(cache.has(key)).toBe(false);
    expect(frontEntryOf(cache, JobKind.Wrapped, 7, 3, null)).toBeUndefined();
  });

  it('an entry answered from its slot stays recent in the cache', () => {
    const cache = cacheOfThree();
    const key = frontKey(JobKind.Wrapped, 9, 0, '');
    keepEntry(cache, key, entryOf(1));
    expect(frontEntryOf(cache, JobKind.Wrapped, 9, 0, null)).toBeDefined();
    keepEntry(cache, 'b', entryOf(2));
    keepEntry(cache, 'c', entryOf(3));
    for (let i = 0; i < 16; i++) frontEntryOf(cache, JobKind.Wrapped, 9, 0, null);
    keepEntry(cache, 'd', entryOf(4));
    expect(cache.has(key)).toBe(true);
    expect(cache.has('b')).toBe(false);
  });
});

describe('front-cache entries found by their rule path (pathEntryOf)', () => {
  const entryOf = (fill: number): Rendered => newRendered(new Uint8Array(1000).fill(fill), EMPTY_BYTES, null, null, null);
  const cacheOfThree = (): FrontCache => {
    const cache = createFrontCache(1 << 30);
    cache.set('probe', entryOf(0));
    const bytes = cache.calculatedSize;
    return createFrontCache(bytes * 3);
  };
  /** The path `p` selects in MAPPING at mod 600 (DE: the eu rule and variant B). */
  const pathOf = (p: Record<string, unknown>, mod = 600): Int32Array => {
    const out = newRulePath();
    const length = evaluatePath(compileMapping(MAPPING), p, NO_VERSION, mod, out);
    return out.slice(0, length);
  };
  const find = (cache: FrontCache, kind: JobKind, rev: number, mappingId: number, path: Int32Array): Rendered | null =>
    pathEntryOf(cache, kind, rev, mappingId, path, path.length);

  it('finds the entry filed for (kind, revision, mapping, path) while its cache holds it, with its tag; nothing for any other', () => {
    const cache = cacheOfThree();
    const de = pathOf({ country: 'DE' });
    expect(Array.from(de)).toEqual([0, 1026]);
    const entry = entryOf(1);
    keepEntry(cache, 'w7:3:0.-1;1.1;', entry);
    expect(find(cache, JobKind.Wrapped, 7, 3, de)).toBeNull();
    rememberPathEntry(JobKind.Wrapped, 7, 3, de, de.length, entry, 'w-tag');
    for (let i = 0; i < 40; i++) expect(find(cache, JobKind.Wrapped, 7, 3, de)).toBe(entry);
    expect(entry.pathTag).toBe('w-tag');
    // Another revision, mapping, kind or path; a path that is a prefix of it; another cache of this thread.
    expect(find(cache, JobKind.Wrapped, 8, 3, de)).toBeNull();
    expect(find(cache, JobKind.Wrapped, 7, 4, de)).toBeNull();
    expect(find(cache, JobKind.Serialized, 7, 3, de)).toBeNull();
    expect(find(cache, JobKind.Wrapped, 7, 3, pathOf({ country: 'DE' }, 100))).toBeNull();
    expect(find(cache, JobKind.Wrapped, 7, 3, de.subarray(0, 1))).toBeNull();
    expect(find(cacheOfThree(), JobKind.Wrapped, 7, 3, de)).toBeNull();
    // Evicted: the cache's dispose takes it out of its row, and a new entry for the key is found only once filed.
    for (let n = 0; n < 3; n++) keepEntry(cache, `other${n}`, entryOf(2));
    expect(cache.has('w7:3:0.-1;1.1;')).toBe(false);
    expect(entry.pathRow).toBe(-1);
    expect(find(cache, JobKind.Wrapped, 7, 3, de)).toBeNull();
    const again = entryOf(3);
    keepEntry(cache, 'w7:3:0.-1;1.1;', again);
    expect(find(cache, JobKind.Wrapped, 7, 3, de)).toBeNull();
    rememberPathEntry(JobKind.Wrapped, 7, 3, de, de.length, again, 'w-tag');
    expect(find(cache, JobKind.Wrapped, 7, 3, de)).toBe(again);
  });

  it('files no empty path (the revision\'s own entry, shared by its mappings), no path past a row and no id past int32', () => {
    const cache = cacheOfThree();
    const cases: [number, number, Int32Array][] = [
      [7, 3, new Int32Array(0)],
      [7, 3, Int32Array.from({ length: 13 }, (_, i) => i * 1024)],
      [2 ** 31, 3, pathOf({ country: 'DE' })],
      [7, 2 ** 32 + 3, pathOf({ country: 'DE' })],
    ];
    for (const [rev, mappingId, path] of cases) {
      const entry = entryOf(1);
      keepEntry(cache, `k${rev}:${mappingId}:${path.length}`, entry);
      rememberPathEntry(JobKind.Wrapped, rev, mappingId, path, path.length, entry, 'tag');
      expect(entry.pathRow).toBe(-1);
      expect(find(cache, JobKind.Wrapped, rev, mappingId, path)).toBeNull();
    }
    // 12 edges fit a row.
    const longest = Int32Array.from({ length: 12 }, (_, i) => i * 1024);
    const entry = entryOf(2);
    keepEntry(cache, 'longest', entry);
    rememberPathEntry(JobKind.Wrapped, 7, 3, longest, longest.length, entry, 'tag');
    expect(find(cache, JobKind.Wrapped, 7, 3, longest)).toBe(entry);
  });

  it('an entry answered by its path stays recent in the cache', () => {
    const cache = cacheOfThree();
    const de = pathOf({ country: 'DE' });
    const entry = entryOf(1);
    keepEntry(cache, 'a', entry);
    rememberPathEntry(JobKind.Wrapped, 9, 3, de, de.length, entry, 'tag');
    keepEntry(cache, 'b', entryOf(2));
    keepEntry(cache, 'c', entryOf(3));
    for (let i = 0; i < 16; i++) expect(find(cache, JobKind.Wrapped, 9, 3, de)).toBe(entry);
    keepEntry(cache, 'd', entryOf(4));
    expect(cache.has('a')).toBe(true);
    expect(cache.has('b')).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { frontKey, frontKeyOf } from '../../../src/delivery/front-cache.js';
import { compileMapping, evaluateMapping, rememberIn } from '../../../src/mapping/index.js';
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
    const de = evaluateMapping(mapping, { country: 'DE' }, '', 600);
    const first = frontKeyOf(JobKind.Wrapped, 7, 3, de);
    expect(first).toBe(frontKey(JobKind.Wrapped, 7, 3, de.key));
    // Another request selecting the same combination gets the very same key.
    const again = evaluateMapping(mapping, { country: 'DE', level: 2 }, '', 999);
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
    const none = evaluateMapping(mapping, { country: 'FR' }, '', 600);
    const other = evaluateMapping(compileMapping({ rules: [MAPPING.rules[0]] }), {}, '', 0);
    expect(none.key).toBe('1.1;');
    expect(other.key).toBe('');
    expect(frontKeyOf(JobKind.Wrapped, 9, 5, other)).toBe(frontKey(JobKind.Wrapped, 9, 0, ''));
    expect(frontKeyOf(JobKind.Wrapped, 10, 6, other)).toBe(frontKey(JobKind.Wrapped, 10, 0, ''));
    // No rules evaluated (plain answers, content without a mapping): the mapping is not in the key.
    expect(frontKeyOf(JobKind.Plain, 7, 3, null)).toBe(frontKey(JobKind.Plain, 7, 0, ''));
    expect(frontKeyOf(JobKind.Wrapped, 7, 3, null)).toBe(frontKey(JobKind.Wrapped, 7, 0, ''));
  });

  it('one combination serving items of many revisions (a combine): each key right, past the memo too', () => {
    const de = evaluateMapping(compileMapping(MAPPING), { country: 'DE' }, '', 600);
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

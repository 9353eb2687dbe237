/**
 * The store of test/e2e/failures.test.ts and test/e2e/quick-restarts.test.ts: a 200 KB item, 200
 * distinct 20 KB items (every request of the overload test misses the front cache), a mapped item and
 * a small one, about 4 MB that every start imports.
 */
export const KEY = 'failure-key-1';
export const BUNDLE = {
  environments: {
    env: {
      keys: [KEY],
      content: {
        Big: { json: { blob: 'x'.repeat(200_000) } },
        // Distinct items, so that every request of the overload test misses the front cache.
        ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`Many${i}`, { json: { i, blob: 'y'.repeat(20_000) } }])),
        Mapped: { json: { a: 1 }, mapping: { rules: [{ segment: 's', patch: { a: 2 } }] } },
        Fine: { json: { ok: true } },
      },
    },
  },
};

import { NO_VERSION } from '../../../src/shared/app-version.js';
import { describe, expect, it } from 'vitest';
import { itemTag, wrappedTag, type TaggedRevision } from '../../../src/delivery/etag.js';
import { compileMapping, evaluateMapping } from '../../../src/mapping/index.js';
import { JobKind } from '../../../src/pool/protocol.js';

const MAPPING = compileMapping({ rules: [{ segment: 'eu', when: { country: 'DE' }, patch: { shop: { discount: 5 } } }] });

/** A revision as the directory has it; the hash a slice of a longer text, as the directory makes them. */
function revision(revId: number): TaggedRevision {
  const text = `hashes:${'h'.repeat(20)}${revId}:end`;
  return { revId, hash: text.slice(7, text.length - 4) };
}

describe('item tags (etag.ts)', () => {
  const eu = evaluateMapping(MAPPING, { country: 'DE' }, NO_VERSION, 0);
  const revisions = Array.from({ length: 12 }, (_, i) => revision(100 + i));

  it('name the kind, the revision hash, the mapping and the combination', () => {
    expect(eu.key).not.toBe('');
    const rev = revisions[0]!;
    expect(itemTag(JobKind.Wrapped, rev, 3, eu)).toBe(`w${rev.hash}.3.${eu.key}`);
    expect(itemTag(JobKind.Serialized, rev, 3, eu)).toBe(`s${rev.hash}.3.${eu.key}`);
    expect(itemTag(JobKind.Wrapped, rev, 0, null)).toBe(`w${rev.hash}.0.`);
    expect(itemTag(JobKind.Plain, rev, 3, eu)).toBe(rev.hash);
    expect(wrappedTag(JobKind.Wrapped, rev, 3, eu, 42)).toBe(`w${rev.hash}.3.${eu.key}.42`);
  });

  it('stay right while one combination serves several revisions in turn, past the memo bound', () => {
    for (let round = 0; round < 3; round++) {
      for (const rev of revisions) {
        expect(itemTag(JobKind.Wrapped, rev, 3, eu)).toBe(`w${rev.hash}.3.${eu.key}`);
        expect(itemTag(JobKind.Wrapped, rev, 0, null)).toBe(`w${rev.hash}.0.`);
      }
    }
  });

  it('come back as the same string for a revision served again among a few others', () => {
    const [a, b, c] = revisions;
    const first = itemTag(JobKind.Wrapped, a!, 3, eu);
    itemTag(JobKind.Wrapped, b!, 3, eu);
    itemTag(JobKind.Serialized, c!, 3, eu);
    // The same object: the header block kept for it is then recognised without comparing characters.
    expect(Object.is(itemTag(JobKind.Wrapped, a!, 3, eu), first)).toBe(true);
    const bare = itemTag(JobKind.Wrapped, a!, 0, null);
    itemTag(JobKind.Wrapped, b!, 0, null);
    expect(Object.is(itemTag(JobKind.Wrapped, a!, 0, null), bare)).toBe(true);
  });
});

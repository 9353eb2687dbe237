/**
 * The control thread's catalog bodies: kept up to date from deltas (blocks of entries split,
 * emptied and re-encoded), they equal a body built from scratch byte for byte, and parse to what
 * the catalog says: ids as created, newest hash, d.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { catalogTag } from '../../../src/shared/catalog-tag.js';
import { CatalogBook } from '../../../src/control/catalog.js';
import type { ContentMeta, DirectorySnapshot, RoutingDelta } from '../../../src/store/types.js';

function meta(envId: string, id: string, hash: string, ruleCount: number): ContentMeta {
  return {
    envId,
    id,
    idLower: id.toLowerCase(),
    revisions: [{ revId: 1, number: 1, hash, minAppVersion: null, createdAt: '' }],
    mappingId: ruleCount > 0 ? 1 : null,
    mappingRuleCount: ruleCount,
    createdAt: '',
    updatedAt: '',
  };
}

/** The body as text; on the way, its gzip member (joined from per-block parts) must decode to it and its tag must be its hash. */
function bodyText(book: CatalogBook, envId: string): string {
  const [c] = book.bodies([envId]);
  if (c === undefined) return '';
  expect(gunzipSync(c.gzip).equals(Buffer.from(c.body))).toBe(true);
  expect(c.tag).toBe(catalogTag(c.body));
  return Buffer.from(c.body).toString('utf8');
}

describe('CatalogBook', () => {
  it('keeps a large environment\'s body equal to a fresh build through thousands of random edits', () => {
    let seed = 7;
    const rnd = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    const live = new Map<string, ContentMeta>();
    for (let i = 0; i < 3000; i++) live.set(`item${i}`, meta('prod', `Item${i}`, `h${i}`, i % 3));
    const snapshotOf = (seq: number): DirectorySnapshot => ({ seq, environments: ['prod', 'dev'], keys: [], contents: [...live.values()] });
    const book = new CatalogBook(snapshotOf(0));
    let seq = 0;
    for (let step = 0; step < 60; step++) {
      const contents: RoutingDelta['contents'][number][] = [];
      // Bursts in one region of the key space split blocks; bursts of deletes empty them.
      const base = Math.floor(rnd() * 4000);
      for (let n = 0; n < 80; n++) {
        const i = base + Math.floor(rnd() * 600);
        const idLower = `item${i}`;
        if (contents.some((c) => c.idLower === idLower)) continue;
        if (rnd() < 0.4 && live.has(idLower)) {
          live.delete(idLower);
          contents.push({ envId: 'prod', idLower, meta: null });
        } else {
          const m = meta('prod', `Item${i}`, `h${i}-${step}`, Math.floor(rnd() * 2));
          live.set(idLower, m);
          contents.push({ envId: 'prod', idLower, meta: m });
        }
      }
      expect(book.apply({ fromSeq: seq, toSeq: seq + 1, environments: [], keys: [], contents })).toEqual(['prod']);
      seq++;
      expect(bodyText(book, 'prod')).toBe(bodyText(new CatalogBook(snapshotOf(seq)), 'prod'));
    }
    // The first 1,100 ids in catalog order, more than the largest block holds: deleting them empties
    // whole blocks; putting a few back fills the gap again.
    const run = [...live.keys()].sort().slice(0, 1100);
    for (const k of run) live.delete(k);
    book.apply({ fromSeq: seq, toSeq: seq + 1, environments: [], keys: [], contents: run.map((idLower) => ({ envId: 'prod', idLower, meta: null })) });
    seq++;
    expect(bodyText(book, 'prod')).toBe(bodyText(new CatalogBook(snapshotOf(seq)), 'prod'));
    const back = run.slice(0, 5).map((idLower) => meta('prod', idLower.replace('item', 'Item'), 'back', 1));
    for (const m of back) live.set(m.idLower, m);
    book.apply({ fromSeq: seq, toSeq: seq + 1, environments: [], keys: [], contents: back.map((m) => ({ envId: 'prod', idLower: m.idLower, meta: m })) });
    seq++;
    expect(bodyText(book, 'prod')).toBe(bodyText(new CatalogBook(snapshotOf(seq)), 'prod'));

    const parsed = JSON.parse(bodyText(book, 'prod')) as { catalog: Record<string, { h: string; d: boolean }> };
    expect(Object.keys(parsed.catalog).length).toBe(live.size);
    for (const m of live.values()) expect(parsed.catalog[m.id]).toEqual({ h: m.revisions[0]!.hash, d: m.mappingRuleCount > 0 });
    expect(bodyText(book, 'dev')).toBe('{"catalog":{}}');
  });

  it('escapes ids as JSON.stringify does and keeps "__proto__" an own key', () => {
    const ids = ['__proto__', 'quote"d', 'back\\slash', 'line\nbreak', '\u2028', 'Straße'];
    const book = new CatalogBook({ seq: 0, environments: ['e'], keys: [], contents: ids.map((id) => meta('e', id, 'h', 0)) });
    const parsed = JSON.parse(bodyText(book, 'e')) as { catalog: Record<string, unknown> };
    expect(Object.keys(parsed.catalog).sort()).toEqual([...ids].sort());
    expect(Object.getPrototypeOf(parsed.catalog)).toBe(Object.prototype);
  });

  it('says which mapping ids a content references, through puts, deletes and environment deletion', () => {
    const book = new CatalogBook({ seq: 0, environments: ['e'], keys: [], contents: [meta('e', 'A', 'h', 2)] });
    expect(book.knowsMapping(1)).toBe(true);
    book.apply({ fromSeq: 0, toSeq: 1, environments: [{ envId: 'e', exists: false }], keys: [], contents: [] });
    expect(book.knowsMapping(1)).toBe(false);
    expect(book.bodies(['e'])).toEqual([]);
  });
});

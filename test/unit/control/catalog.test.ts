/**
 * The control thread's catalog bodies: kept up to date from deltas (blocks of entries split,
 * emptied and re-encoded), they equal a body built from scratch byte for byte, and parse to what
 * the catalog says: ids as created, newest hash, d.
 */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { catalogTag } from '../../../src/shared/catalog-tag.js';
import { CatalogBook, JOIN_BELOW_BYTES } from '../../../src/control/catalog.js';
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

/**
 * The body as text, its pieces joined; on the way, the pieces' lengths must add up, its gzip member
 * (in pieces too) must decode to it, and its tag must be the hash of the joined body.
 */
function bodyText(book: CatalogBook, envId: string): string {
  const [c] = book.bodies([envId]);
  if (c === undefined) return '';
  const body = Buffer.concat(c.body);
  const gzip = Buffer.concat(c.gzip);
  expect(body.byteLength).toBe(c.bodyBytes);
  expect(gzip.byteLength).toBe(c.gzipBytes);
  expect(gunzipSync(gzip).equals(body)).toBe(true);
  expect(c.tag).toBe(catalogTag(body));
  for (const p of [...c.body, ...c.gzip]) expect(p.buffer).toBeInstanceOf(SharedArrayBuffer);
  return body.toString('utf8');
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

  it('sends a small body as one piece, and a large one as pieces of which an edit replaces one block', () => {
    const small = new CatalogBook({ seq: 0, environments: ['e'], keys: [], contents: [meta('e', 'A', 'h', 0)] });
    expect(small.bodies(['e'])[0]!.body.length).toBe(1);
    expect(small.bodies(['e'])[0]!.gzip.length).toBe(1);

    const contents = Array.from({ length: 5000 }, (_, i) => meta('e', `Item${String(i).padStart(5, '0')}`, `h${i}`, 0));
    const book = new CatalogBook({ seq: 0, environments: ['e'], keys: [], contents });
    const before = book.bodies(['e'])[0]!;
    expect(before.bodyBytes).toBeGreaterThanOrEqual(JOIN_BELOW_BYTES);
    expect(before.body.length).toBeGreaterThan(3);
    const edited = meta('e', 'Item02500', 'changed', 0);
    book.apply({ fromSeq: 0, toSeq: 1, environments: [], keys: [], contents: [{ envId: 'e', idLower: edited.idLower, meta: edited }] });
    const after = book.bodies(['e'])[0]!;
    expect(after.body.length).toBe(before.body.length);
    // One block's bytes are new memory; every other piece is the very same view as before.
    const changed = after.body.filter((p, i) => p !== before.body[i]);
    expect(changed.length).toBe(1);
    expect(Buffer.from(changed[0]!).toString()).toContain('"Item02500":{"h":"changed"');
    // The gzip member: that block's segment and the closing piece (its CRC and length) are new.
    expect(after.gzip.filter((p, i) => p !== before.gzip[i]).length).toBe(2);
    expect(after.tag).not.toBe(before.tag);
    expect(bodyText(book, 'e')).toContain('"Item02500":{"h":"changed","d":false}');
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

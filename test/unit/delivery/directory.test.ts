import { describe, expect, it } from 'vitest';
import { CatalogBook } from '../../../src/control/catalog.js';
import type { RoutedDelta } from '../../../src/control/protocol.js';
import { packChanges, routedSnapshot } from '../../../src/control/routed.js';
import { Directory, MappingLibrary, chooseRevision, revisionsOf } from '../../../src/delivery/directory.js';
import type { RevisionReader } from '../../../src/store/types.js';
import { NO_VERSION, comparableVersion as parseVersion } from '../../../src/shared/app-version.js';
import type { DirectorySnapshot, RoutingDelta } from '../../../src/store/types.js';
import { createHash } from 'node:crypto';

const rev = (revId: number, minAppVersion: string | null) => ({ revId, number: revId, hash: `h${revId}`, minAppVersion, createdAt: '' });

const SNAPSHOT: DirectorySnapshot = {
  seq: 0,
  environments: ['prod', 'empty'],
  keys: [{ digest: createHash('sha256').update('k1').digest('hex'), keyId: 'id1', envId: 'prod' }],
  contents: [
    {
      envId: 'prod', id: 'Game', idLower: 'game', mappingId: 7, mappingRuleCount: 2, createdAt: '', updatedAt: '',
      revisions: [rev(1, null), rev(2, '2.0.0'), rev(3, '1.5.0')],
    },
    { envId: 'prod', id: '__proto__', idLower: '__proto__', mappingId: null, mappingRuleCount: 0, createdAt: '', updatedAt: '', revisions: [rev(4, null)] },
  ],
};

/** Mapping 7 is stored; any other id is missing (as a hand-damaged store would have it). */
const reader: RevisionReader = {
  readRevision: () => undefined,
  readMapping: (id) => (id === 7 ? JSON.stringify({ rules: [{ segment: 's', patch: { a: 1 } }, { segment: 't', patch: { b: 1 } }] }) : undefined),
  close: () => undefined,
};
const library = (errors: number[] = []): MappingLibrary => new MappingLibrary(reader, (id) => errors.push(id));

/** A Directory with the catalog bodies the control thread would send with the snapshot. */
function build(snapshot: DirectorySnapshot, lib: MappingLibrary): Directory {
  return new Directory(routedSnapshot(snapshot), lib, new Map(new CatalogBook(snapshot).allBodies().map((c) => [c.envId, c])));
}

describe('Directory', () => {
  const dir = build(SNAPSHOT, library());

  it('finds the environment of a plain key by its SHA-256 digest, and not an unknown key', () => {
    expect(dir.lookupKey('k1')?.env.id).toBe('prod');
    expect(dir.lookupKey('k1')?.keyId).toBe('id1');
    expect(dir.lookupKey('k2')).toBeUndefined();
  });

  it('prebuilds the catalog with ids as created (in caseless-key order), newest hash and d from the rule count', () => {
    const body = JSON.parse(Buffer.concat(dir.environments.get('prod')!.catalog.body).toString()) as { catalog: Record<string, unknown> };
    expect(Object.keys(body.catalog)).toEqual(['__proto__', 'Game']);
    expect(body.catalog.Game).toEqual({ h: 'h3', d: true });
    expect(Buffer.concat(dir.environments.get('empty')!.catalog.body).toString()).toBe('{"catalog":{}}');
  });

  it('chooses the newest revision whose minAppVersion is absent or <= v', () => {
    const game = dir.environments.get('prod')!.contents.get('game')!;
    expect(chooseRevision(game, NO_VERSION)?.revId).toBe(3);
    expect(chooseRevision(game, parseVersion('1.4.9'))?.revId).toBe(1);
    expect(chooseRevision(game, parseVersion('1.5.0'))?.revId).toBe(3);
    expect(chooseRevision(game, parseVersion('2.0.0'))?.revId).toBe(3);
  });

  it('takes the newest qualifying revision even when minAppVersions are out of order', () => {
    const d = build({
      seq: 0, environments: ['e'], keys: [],
      contents: [{
        envId: 'e', id: 'L', idLower: 'l', mappingId: null, mappingRuleCount: 0, createdAt: '', updatedAt: '',
        revisions: [rev(1, null), rev(2, '1.5.0'), rev(3, '2.0.0'), rev(4, '1.0.0')],
      }],
    }, library());
    const l = d.environments.get('e')!.contents.get('l')!;
    const cases: [string, number][] = [['0.9.9', 1], ['1.0.0', 4], ['1.4.99', 4], ['2.0.0', 4], ['10.0.0', 4]];
    for (const [v, revId] of cases) expect(chooseRevision(l, parseVersion(v))?.revId).toBe(revId);
    expect(chooseRevision(l, NO_VERSION)?.revId).toBe(4);
  });

  it('returns undefined when every revision needs a newer app', () => {
    const only = build({
      seq: 0, environments: ['e'], keys: [],
      contents: [{ envId: 'e', id: 'X', idLower: 'x', mappingId: null, mappingRuleCount: 0, createdAt: '', updatedAt: '', revisions: [rev(9, '5.0.0')] }],
    }, library());
    expect(chooseRevision(only.environments.get('e')!.contents.get('x')!, parseVersion('4.9.9'))).toBeUndefined();
  });

  it('compiles each content\'s mapping once, and marks one that cannot be read as broken', () => {
    const errors: number[] = [];
    const lib = library(errors);
    const snapshot: DirectorySnapshot = {
      seq: 0, environments: ['e'], keys: [],
      contents: [
        { envId: 'e', id: 'A', idLower: 'a', mappingId: 7, mappingRuleCount: 2, createdAt: '', updatedAt: '', revisions: [rev(1, null)] },
        { envId: 'e', id: 'B', idLower: 'b', mappingId: 8, mappingRuleCount: 1, createdAt: '', updatedAt: '', revisions: [rev(2, null)] },
      ],
    };
    const first = build(snapshot, lib).environments.get('e')!.contents;
    const second = build(snapshot, lib).environments.get('e')!.contents;
    expect(first.get('a')!.mapping?.ruleCount).toBe(2);
    expect(second.get('a')!.mapping).toBe(first.get('a')!.mapping);
    expect(first.get('b')!.mappingBroken).toBe(true);
    expect(errors).toEqual([8]);
  });
});

describe('Directory.applyDelta', () => {
  const game = SNAPSHOT.contents[0]!;
  const routed = (fromSeq: number, toSeq: number, part: Partial<RoutingDelta>): RoutedDelta => {
    const d: RoutingDelta = { fromSeq, toSeq, environments: [], keys: [], contents: [], ...part };
    return { ...d, contents: packChanges(d.contents) };
  };

  it('replaces a content\'s view whole: a request holding the old view keeps what it had', () => {
    const d = build(SNAPSHOT, library());
    const held = d.environments.get('prod')!.contents.get('game')!;
    d.applyDelta(routed(0, 1, { contents: [{ envId: 'prod', idLower: 'game', meta: { ...game, revisions: [...game.revisions, rev(5, null)] } }] }), new Map(), true, new Map());
    expect(revisionsOf(held).map((r) => r.revId)).toEqual([3, 2, 1]);
    expect(revisionsOf(d.environments.get('prod')!.contents.get('game')!).map((r) => r.revId)).toEqual([5, 3, 2, 1]);
    // The compiled mapping is the same object: its id did not change, nothing was compiled again.
    expect(d.environments.get('prod')!.contents.get('game')!.mapping).toBe(held.mapping);
    expect(d.seq).toBe(1);
  });

  it('drops a deleted environment with its keys; a request holding its view keeps it whole', () => {
    const d = build(SNAPSHOT, library());
    const held = d.lookupKey('k1')!.env;
    d.applyDelta(routed(0, 3, { environments: [{ envId: 'prod', exists: false }] }), new Map(), true, new Map());
    expect(d.lookupKey('k1')).toBeUndefined();
    expect(d.environments.has('prod')).toBe(false);
    expect(held.contents.size).toBe(2);
  });

  it('refuses a delta that does not start at the applied sequence, changing nothing', () => {
    const d = build(SNAPSHOT, library());
    expect(() => d.applyDelta(routed(1, 2, { environments: [{ envId: 'prod', exists: false }] }), new Map(), true, new Map())).toThrow();
    expect(d.lookupKey('k1')?.env.id).toBe('prod');
    expect(d.seq).toBe(0);
  });

  it('keeps a mapping compiled while an update\'s slices arrive, and forgets it once nothing references it', () => {
    let reads = 0;
    const counting: RevisionReader = { ...reader, readMapping: (id) => (reads++, reader.readMapping(id)) };
    const d = build(SNAPSHOT, new MappingLibrary(counting, () => undefined));
    expect(reads).toBe(1);
    const plain = { ...game, mappingId: null, mappingRuleCount: 0 };
    // Slice 1 drops the last reference, slice 2 takes it again: no second read or compilation.
    d.applyDelta(routed(0, 2, { contents: [{ envId: 'prod', idLower: 'game', meta: plain }] }), new Map(), false, new Map());
    d.applyDelta(routed(0, 2, { contents: [{ envId: 'prod', idLower: 'game', meta: game }] }), new Map(), true, new Map());
    expect(reads).toBe(1);
    expect(d.environments.get('prod')!.contents.get('game')!.mapping?.ruleCount).toBe(2);
    // Unreferenced at the end of an update: forgotten, so the next reference reads it again.
    d.applyDelta(routed(2, 3, { contents: [{ envId: 'prod', idLower: 'game', meta: plain }] }), new Map(), true, new Map());
    d.applyDelta(routed(3, 4, { contents: [{ envId: 'prod', idLower: 'game', meta: game }] }), new Map(), true, new Map());
    expect(reads).toBe(2);
  });

  it('notes the display id of each content a slice changes, a deleted one\'s from the view it replaces', () => {
    const d = build(SNAPSHOT, library());
    const changed = new Map<string, string[] | null>();
    d.applyDelta(
      routed(0, 1, {
        contents: [
          { envId: 'prod', idLower: 'game', meta: null },
          { envId: 'prod', idLower: 'new', meta: { ...game, id: 'New', idLower: 'new' } },
          { envId: 'gone', idLower: 'x', meta: { ...game, envId: 'gone', id: 'X', idLower: 'x' } },
        ],
      }),
      new Map(),
      true,
      changed,
    );
    expect([...changed]).toEqual([['prod', ['Game', 'New']]]);
    expect(d.environments.get('prod')!.contents.has('game')).toBe(false);
    expect(d.environments.get('prod')!.contents.get('new')!.id).toBe('New');
    // An environment noted as changed whole collects no ids.
    const whole = new Map<string, string[] | null>([['prod', null]]);
    d.applyDelta(routed(1, 2, { contents: [{ envId: 'prod', idLower: 'new', meta: null }] }), new Map(), true, whole);
    expect([...whole]).toEqual([['prod', null]]);
  });

  it('swaps in the catalog body the update carries, for that environment only', () => {
    const d = build(SNAPSHOT, library());
    const empty = d.environments.get('empty')!.catalog;
    const body = Buffer.from('{"catalog":{"new":{"h":"x","d":false}}}');
    const catalog = { body: [body], bodyBytes: body.byteLength, gzip: null, gzipBytes: 0, tag: 'kx' };
    d.applyDelta(routed(0, 1, {}), new Map([['prod', catalog]]), true, new Map());
    expect(d.environments.get('prod')!.catalog).toBe(catalog);
    expect(d.environments.get('empty')!.catalog).toBe(empty);
  });

  it('keeps ids past 32 bits exactly (store row ids; small ones are held as small integers)', () => {
    const big = 2 ** 40 + 5;
    const snapshot: DirectorySnapshot = {
      seq: 0,
      environments: ['prod'],
      keys: [],
      contents: [
        { envId: 'prod', id: 'Big', idLower: 'big', mappingId: 3_000_000_007, mappingRuleCount: 0, createdAt: '', updatedAt: '', revisions: [rev(big - 1, null), rev(big, '2.0.0')] },
        { envId: 'prod', id: 'Small', idLower: 'small', mappingId: 7, mappingRuleCount: 2, createdAt: '', updatedAt: '', revisions: [rev(2_147_483_647, null), rev(2_147_483_648, '3.0.0')] },
      ],
    };
    const d = build(snapshot, library());
    const contents = d.environments.get('prod')!.contents;
    const bigView = contents.get('big')!;
    expect(bigView.revId).toBe(big);
    expect(bigView.mappingId).toBe(3_000_000_007);
    expect(chooseRevision(bigView, parseVersion('1.0.0'))?.revId).toBe(big - 1);
    const small = contents.get('small')!;
    expect(small.mappingId).toBe(7);
    expect(small.revId).toBe(2_147_483_648);
    expect(chooseRevision(small, parseVersion('1.0.0'))?.revId).toBe(2_147_483_647);
  });
});

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { apiKeyDigest, isRevisionSource, openRevisionReader, openStore, openWorkerReader, type Store } from '../../../src/store/index.js';
import type { RevisionText } from '../../../src/store/types.js';
import { prepareImport } from '../../../src/store/bundle/bundle.js';
import { MAPPING, rejectsWith, tempDir } from './helpers.js';
import { STORE_KINDS, openStoreOfKind } from './kinds.js';

const BASE = '{\n  // defaults\n  "level": 1,\n  "color": "green"\n}';


/** A worker thread's reader of any store (synchronous for SQLite, batched for PostgreSQL), as promises. */
function workerReader(url: string): {
  revision(id: number): Promise<RevisionText | undefined>;
  mapping(id: number): Promise<string | undefined>;
  close(): Promise<void>;
} {
  const r = openWorkerReader(url);
  if (isRevisionSource(r)) {
    return {
      revision: async (id) => (await r.readRevisions([id])).get(id),
      mapping: async (id) => (await r.readMappings([id])).get(id),
      close: () => r.close(),
    };
  }
  return {
    revision: (id) => Promise.resolve(r.readRevision(id)),
    mapping: (id) => Promise.resolve(r.readMapping(id)),
    close: () => Promise.resolve(r.close()),
  };
}

// One contract, every store: the same tests against a SQLite file, an in-memory SQLite database and
// a real PostgreSQL database (created for each test and dropped after it).
describe.concurrent.each(STORE_KINDS)('Store (%s)', (kind) => {
  let store: Store;
  let cleanup: () => Promise<void> | void = () => undefined;

  beforeEach(async () => {
    ({ store, cleanup } = await openStoreOfKind(kind, join('nested', 'dir', 'rcd.db')));
  });

  afterEach(async () => {
    await store.close();
    await cleanup();
  });

  describe.sequential('environments', () => {
    it('creates once, lists with counts, validates ids', async () => {
      expect(await store.putEnvironment('prod')).toBe(true);
      expect(await store.putEnvironment('prod')).toBe(false);
      expect(await store.putEnvironment('dev.eu-1_a')).toBe(true);
      await store.createKey('prod');
      await store.putContent('prod', 'A', '{}', null);
      const list = await store.listEnvironments();
      expect(list.map((e) => [e.id, e.contentCount, e.keyCount])).toEqual([
        ['dev.eu-1_a', 0, 0],
        ['prod', 1, 1],
      ]);
      expect(list[0]?.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      for (const bad of ['', '-x', '.x', 'a b', 'a/b', 'x'.repeat(65), 'é']) await rejectsWith(store.putEnvironment(bad), 'invalid_request');
    });

    it('environment ids are case sensitive', async () => {
      await store.putEnvironment('prod');
      expect(await store.putEnvironment('Prod')).toBe(true);
    });

    it('delete: not_found when missing, conflict while holding content, cascades with force', async () => {
      await rejectsWith(store.deleteEnvironment('nope', false), 'not_found');
      await store.putEnvironment('e');
      const key = await store.createKey('e');
      await store.putContent('e', 'A', '{"a":1}', null);
      await store.putMapping('e', 'A', { rules: [{ segment: 's', patch: { a: 2 } }] });
      await rejectsWith(store.deleteEnvironment('e', false), 'conflict');
      await store.deleteEnvironment('e', true);
      expect(await store.listEnvironments()).toEqual([]);
      const dir = await store.loadDirectory();
      expect(dir.keys.find((k) => k.keyId === key.id)).toBeUndefined();
      expect(dir.contents).toEqual([]);
      // Recreated: empty, and the old key is gone for good.
      await store.putEnvironment('e');
      expect(await store.listContent('e')).toEqual([]);
      expect(await store.listKeys('e')).toEqual([]);
    });

    it('an environment without content can be deleted without force', async () => {
      await store.putEnvironment('e');
      await store.createKey('e');
      await store.deleteEnvironment('e', false);
      expect(await store.listEnvironments()).toEqual([]);
    });
  });

  describe.sequential('directory', () => {
    it('describes every content item as the content API does: revisions, app versions, mapping rule count, dates', async () => {
      await store.putEnvironment('e');
      await store.putEnvironment('f');
      await store.putContent('e', 'Alpha', '{"a":1}', null);
      await store.putContent('e', 'Alpha', '{"a":2}', '2.0.0');
      await store.putContent('e', 'beta', '{"b":1}', '1.5.0');
      await store.putMapping('e', 'beta', { rules: [{ segment: 's', patch: { b: 2 } }, { segment: 't', patch: { b: 3 } }] });
      await store.putContent('f', 'Gamma', '[1]', null);
      const dir = await store.loadDirectory();
      expect(dir.contents.map((c) => [c.envId, c.id, c.idLower])).toEqual([
        ['e', 'Alpha', 'alpha'],
        ['e', 'beta', 'beta'],
        ['f', 'Gamma', 'gamma'],
      ]);
      for (const c of dir.contents) {
        const detail = (await store.getContent(c.envId, c.id))!;
        expect(c.revisions).toEqual(detail.revisions.map((r) => ({ revId: r.revId, number: r.number, hash: r.hash, minAppVersion: r.minAppVersion, createdAt: r.createdAt })));
        expect([c.createdAt, c.updatedAt]).toEqual([detail.createdAt, detail.updatedAt]);
        const rules = (detail.mapping as { rules?: unknown[] } | null)?.rules?.length ?? 0;
        expect(c.mappingRuleCount).toBe(rules);
        expect(c.mappingId === null).toBe(detail.mapping === null);
      }
      expect(dir.contents[0]!.revisions.map((r) => r.minAppVersion)).toEqual([null, '2.0.0']);
      expect(dir.contents[1]!.mappingRuleCount).toBe(2);
    });
  });

  describe.sequential('keys', () => {
    beforeEach(async () => {
      await store.putEnvironment('a');
      await store.putEnvironment('b');
    });

    it('creates random keys shown once, lists without the key, revokes', async () => {
      const k = await store.createKey('a');
      expect(k.key).toMatch(/^rcd_[A-Za-z0-9_-]{43}$/);
      expect(k.id).toMatch(/^key_[0-9a-f]{16}$/);
      const other = await store.createKey('a');
      expect(other.key).not.toBe(k.key);
      const listed = await store.listKeys('a');
      expect(listed.map((x) => x.id).sort()).toEqual([k.id, other.id].sort());
      expect(JSON.stringify(listed)).not.toContain(k.key);
      expect(listed[0]).toMatchObject({ envId: 'a', lastUsedAt: null, revokedAt: null });

      let dir = await store.loadDirectory();
      expect(dir.keys).toContainEqual({ digest: apiKeyDigest(k.key), keyId: k.id, envId: 'a' });
      await store.revokeKey('a', k.id);
      dir = await store.loadDirectory();
      expect(dir.keys.map((x) => x.keyId)).toEqual([other.id]);
      const revoked = (await store.listKeys('a')).find((x) => x.id === k.id);
      expect(revoked?.revokedAt).toMatch(/T/);
      await store.revokeKey('a', k.id); // idempotent
      expect((await store.listKeys('a')).find((x) => x.id === k.id)?.revokedAt).toBe(revoked?.revokedAt);
      expect((await store.listEnvironments()).find((e) => e.id === 'a')?.keyCount).toBe(1);
    });

    it('a key belongs to one environment only', async () => {
      await store.createKey('a', 'plain-key-123');
      await rejectsWith(store.createKey('b', 'plain-key-123'), 'conflict');
      await rejectsWith(store.createKey('a', 'plain-key-123'), 'conflict');
      await rejectsWith(store.createKey('a', 'short'), 'invalid_request');
      await rejectsWith(store.createKey('a', 'has space in it'), 'invalid_request');
    });

    it('not_found for a missing environment or key; a key of another env cannot be revoked', async () => {
      const k = await store.createKey('a');
      await rejectsWith(store.createKey('zz'), 'not_found');
      await rejectsWith(store.listKeys('zz'), 'not_found');
      await rejectsWith(store.revokeKey('b', k.id), 'not_found');
      await rejectsWith(store.revokeKey('a', 'key_nope'), 'not_found');
    });

    it('recordKeyUse keeps the latest time', async () => {
      const k = await store.createKey('a');
      await store.recordKeyUse([k.id, 'key_unknown'], '2030-01-02T00:00:00.000Z');
      await store.recordKeyUse([k.id], '2030-01-01T00:00:00.000Z');
      expect((await store.listKeys('a'))[0]?.lastUsedAt).toBe('2030-01-02T00:00:00.000Z');
      await store.recordKeyUse([], '2031-01-01T00:00:00.000Z');
    });
  });

  describe.sequential('content', () => {
    beforeEach(async () => {
      await store.putEnvironment('e');
    });

    it('put adds revisions, is idempotent, keeps the id as created and is case-insensitive', async () => {
      const r1 = await store.putContent('e', 'PlayerSettings', BASE, null);
      expect(r1).toMatchObject({ id: 'PlayerSettings', revision: 1, changed: true });
      expect(r1.hash).toMatch(/^[0-9a-f]{32}$/);
      expect(await store.putContent('e', 'playersettings', BASE, null)).toEqual({ ...r1, changed: false });
      // Same value, different comments: a new revision, same hash.
      const r2 = await store.putContent('e', 'PLAYERSETTINGS', BASE.replace('defaults', 'the defaults'), null);
      expect(r2).toEqual({ id: 'PlayerSettings', hash: r1.hash, revision: 2, changed: true });
      // Same text, other minAppVersion: a new revision.
      const r3 = await store.putContent('e', 'PlayerSettings', BASE.replace('defaults', 'the defaults'), '2.0.0');
      expect(r3).toMatchObject({ revision: 3, changed: true, hash: r1.hash });
      const r4 = await store.putContent('e', 'PlayerSettings', '{"level":2}', '2.0.0');
      expect(r4.hash).not.toBe(r1.hash);

      const detail = await store.getContent('e', 'playerSETTINGS');
      expect(detail?.id).toBe('PlayerSettings');
      expect(detail?.revisions.map((r) => [r.number, r.minAppVersion])).toEqual([
        [1, null],
        [2, null],
        [3, '2.0.0'],
        [4, '2.0.0'],
      ]);
      expect(detail?.revisions[0]?.text).toBe(BASE);
      expect(detail?.mapping).toBeNull();

      const list = await store.listContent('e');
      expect(list).toEqual([
        { id: 'PlayerSettings', hash: r4.hash, revisionCount: 4, hasMapping: false, updatedAt: expect.any(String) as string },
      ]);

      const dir = await store.loadDirectory();
      const meta = dir.contents[0]!;
      expect(meta).toMatchObject({ envId: 'e', id: 'PlayerSettings', idLower: 'playersettings', mappingId: null, mappingRuleCount: 0 });
      expect(meta.revisions.map((r) => r.number)).toEqual([1, 2, 3, 4]);
      const ids = meta.revisions.map((r) => r.revId);
      expect(new Set(ids).size).toBe(4);
    });

    it('refuses invalid JSONC with line and column and stores nothing', async () => {
      const err = await rejectsWith(store.putContent('e', 'A', '{\n  "a": 1,\n}', null), 'invalid_content');
      expect(err.message).toContain('line 3, column 1');
      expect(await store.getContent('e', 'A')).toBeUndefined();
      await store.putContent('e', 'A', '{"a":1}', null);
      await rejectsWith(store.putContent('e', 'A', '{"a":', null), 'invalid_content');
      expect((await store.getContent('e', 'A'))?.revisions).toHaveLength(1);
    });

    it('validates ids, minAppVersion and the environment', async () => {
      for (const v of ['1.2', '1.2.3.4', '01.2.3', '1.2.3-beta', 'v1.2.3', '']) {
        await rejectsWith(store.putContent('e', 'A', '{}', v), 'invalid_request');
      }
      await store.putContent('e', 'A', '{}', '0.0.0');
      for (const id of ['', ' ', ' a', 'a ', 'a\nb', 'a\u0000', 'x'.repeat(257), '\ud800']) {
        await rejectsWith(store.putContent('e', id, '{}', null), 'invalid_request');
      }
      await store.putContent('e', '😀'.repeat(256), '{}', null); // 256 characters
      await store.putContent('e', 'with space/and.dots', '{}', null);
      await rejectsWith(store.putContent('nope', 'A', '{}', null), 'not_found');
      expect((await store.listContent('e')).length).toBe(3);
    });

    it('Unicode ids compare case-insensitively', async () => {
      await store.putContent('e', 'Ärger', '{}', null);
      expect((await store.getContent('e', 'äRGER'))?.id).toBe('Ärger');
    });

    it('isolates environments', async () => {
      await store.putEnvironment('other');
      await store.putContent('e', 'A', '{"env":"e"}', null);
      expect(await store.getContent('other', 'A')).toBeUndefined();
      expect(await store.listContent('other')).toEqual([]);
      await store.putContent('other', 'a', '{"env":"other"}', null);
      expect((await store.getContent('e', 'a'))?.revisions[0]?.text).toBe('{"env":"e"}');
    });

    it('delete removes content, revisions and mapping; ids are never reused', async () => {
      await store.putContent('e', 'A', '{"level":1,"color":"x"}', null);
      await store.putMapping('e', 'A', MAPPING);
      const before = (await store.loadDirectory()).contents[0]!;
      await store.deleteContent('e', 'a');
      expect(await store.getContent('e', 'A')).toBeUndefined();
      await rejectsWith(store.deleteContent('e', 'A'), 'content_not_found');
      await store.putContent('e', 'a', '{"level":1,"color":"x"}', null);
      const after = (await store.loadDirectory()).contents[0]!;
      expect(after.id).toBe('a');
      expect(after.revisions[0]!.revId).toBeGreaterThan(before.revisions[0]!.revId);
      expect(after.mappingId).toBeNull();
      const m = await store.putMapping('e', 'A', MAPPING);
      expect(m.mappingId).toBeGreaterThan(before.mappingId ?? Infinity);
    });

    it('rollback copies revision N as the newest', async () => {
      await store.putContent('e', 'A', '{"v":1}', null);
      await store.putContent('e', 'A', '{"v":2}', '1.0.0');
      const r = await store.rollback('e', 'a', 1);
      expect(r).toMatchObject({ id: 'A', revision: 3, changed: true });
      const detail = await store.getContent('e', 'A');
      expect(detail?.revisions[2]).toMatchObject({ number: 3, text: '{"v":1}', minAppVersion: null, hash: detail?.revisions[0]?.hash });
      expect(await store.rollback('e', 'A', 3)).toMatchObject({ revision: 3, changed: false });
      await rejectsWith(store.rollback('e', 'A', 9), 'not_found');
      await rejectsWith(store.rollback('e', 'A', 0), 'invalid_request');
      await rejectsWith(store.rollback('e', 'B', 1), 'content_not_found');
    });
  });

  describe.sequential('mappings', () => {
    beforeEach(async () => {
      await store.putEnvironment('e');
      await store.putContent('e', 'Game', BASE, null);
    });

    it('put stores an immutable row, unchanged mapping keeps its id, delete clears it', async () => {
      const m1 = await store.putMapping('e', 'game', MAPPING);
      expect(m1.ruleCount).toBe(2);
      // The content it belongs to, named as created with its newest hash, whatever spelling was asked.
      const hash = (await store.listContent('e'))[0]!.hash;
      expect([m1.id, m1.hash]).toEqual(['Game', hash]);
      expect(await store.putMapping('e', 'GAME', MAPPING)).toEqual(m1);
      let dir = await store.loadDirectory();
      expect(dir.contents[0]).toMatchObject({ mappingId: m1.mappingId, mappingRuleCount: 2 });
      expect((await store.getContent('e', 'Game'))?.mapping).toEqual(MAPPING);
      expect((await store.listContent('e'))[0]?.hasMapping).toBe(true);

      const m2 = await store.putMapping('e', 'Game', { rules: [] });
      expect(m2.mappingId).toBeGreaterThan(m1.mappingId);
      expect(m2.ruleCount).toBe(0);
      dir = await store.loadDirectory();
      expect(dir.contents[0]).toMatchObject({ mappingId: m2.mappingId, mappingRuleCount: 0 });

      // The old row stays readable by id: a worker may still be rendering with it.
      const reader = workerReader(store.readerUrl);
      try {
        expect(JSON.parse((await reader.mapping(m1.mappingId)) ?? 'null')).toEqual(MAPPING);
        expect(await store.readMappings([m1.mappingId, m1.mappingId + 1000])).toEqual(new Map([[m1.mappingId, JSON.stringify(MAPPING)]]));
      } finally {
        await reader.close();
      }

      expect(await store.deleteMapping('e', 'GAME')).toEqual({ id: 'Game', hash });
      expect((await store.loadDirectory()).contents[0]!.mappingId).toBeNull();
      await rejectsWith(store.deleteMapping('e', 'Game'), 'not_found');
      await rejectsWith(store.putMapping('e', 'Nope', MAPPING), 'content_not_found');
      expect(await store.deleteContent('e', 'game')).toEqual({ id: 'Game', hash });
    });

    it('refuses an invalid mapping and one whose patch does not apply to the content; nothing stored', async () => {
      const m = await store.putMapping('e', 'Game', MAPPING);
      await rejectsWith(store.putMapping('e', 'Game', { rules: [{ segment: 's', when: { a: { $bogus: 1 } }, patch: {} }] }), 'invalid_mapping');
      await rejectsWith(
        store.putMapping('e', 'Game', { rules: [{ segment: 's', patch: [{ op: 'replace', path: '/missing/deep', value: 1 }] }] }),
        'invalid_mapping',
      );
      expect((await store.loadDirectory()).contents[0]?.mappingId).toBe(m.mappingId);
    });
  });

  describe.sequential('prepared imports (the admin API\'s path: checked in the import thread, written here)', () => {
    it('writes new items and appends to stored ones; the change log names each item once; a key owned elsewhere refuses it all', async () => {
      await store.putEnvironment('e');
      await store.putContent('e', 'Old', '{"v":1}', null);
      const head = (await store.changesSince(0, 1000)).headSeq;
      const bundle = {
        environments: {
          e: {
            content: {
              Old: { revisions: [{ text: '{"v":1}' }, { text: '{"v":2}' }] },
              New: { revisions: [{ text: '{"n":1}' }, { text: '{"n":2}', minAppVersion: '2.0.0' }], mapping: MAPPING },
              Multi: { revisions: [{ text: '{"m":1}' }, { text: '{"m":2}' }, { text: '{"m":3}' }] },
            },
          },
        },
      };
      const report = await store.importPrepared(structuredClone(prepareImport(bundle)));
      expect(report).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 6, mappingsChanged: 1, schedulesAdded: 0, rolloutsAdded: 0 });
      expect((await store.getContent('e', 'Old'))?.revisions.map((r) => [r.number, r.text])).toEqual([
        [1, '{"v":1}'],
        [2, '{"v":2}'],
      ]);
      const created = await store.getContent('e', 'New');
      expect(created?.revisions.map((r) => [r.number, r.text, r.minAppVersion])).toEqual([
        [1, '{"n":1}', null],
        [2, '{"n":2}', '2.0.0'],
      ]);
      expect(created?.mapping).toEqual(MAPPING);
      const touched = (await store.changesSince(head, 1000)).entries.filter((c) => c.kind === 'content').map((c) => c.target);
      // A new item's revisions do not log it again: one entry however many revisions it brings.
      expect(touched.filter((t) => t === 'multi').length).toBe(1);
      expect(touched).toContain('new');
      expect(touched).toContain('old');
      expect((await store.importPrepared(prepareImport(bundle))).revisionsAdded).toBe(0);

      await store.createKey('e', 'owned-by-e-0001');
      const before = await store.loadDirectory();
      const stolen = { environments: { f: { keys: ['owned-by-e-0001'], content: { X: { text: '{' } } } } };
      const err = await rejectsWith(store.importPrepared(prepareImport(stolen)), 'invalid_bundle');
      expect((err.details as { path: string }[]).map((d) => d.path)).toEqual(['/environments/f/keys/0', '/environments/f/content/X/text']);
      expect(await store.loadDirectory()).toEqual(before);
    });
  });

  describe.sequential('sync', () => {
    beforeEach(async () => {
      await store.putEnvironment('dev');
      await store.putEnvironment('prod');
      await store.putContent('dev', 'Game', '{"level":1,"color":"a"}', null);
      await store.putContent('dev', 'Game', '{"level":2,"color":"a"}', '1.2.3');
      await store.putMapping('dev', 'Game', MAPPING);
      await store.putContent('dev', 'Shop', '{"items":[]}', null);
    });

    it('copies newest revisions and mappings; unchanged on repeat; target invisible before', async () => {
      expect(await store.getContent('prod', 'Game')).toBeUndefined();
      const first = await store.sync('dev', 'prod');
      expect(first.items.map((i) => [i.id, i.action])).toEqual([
        ['Game', 'created'],
        ['Shop', 'created'],
      ]);
      const game = await store.getContent('prod', 'game');
      expect(game?.id).toBe('Game');
      expect(game?.revisions.map((r) => [r.number, r.text, r.minAppVersion])).toEqual([[1, '{"level":2,"color":"a"}', '1.2.3']]);
      expect(game?.mapping).toEqual(MAPPING);
      expect(first.items[0]!.hash).toBe(game!.revisions[0]!.hash);

      const again = await store.sync('dev', 'prod');
      expect(again.items.map((i) => i.action)).toEqual(['unchanged', 'unchanged']);
      expect((await store.getContent('prod', 'Game'))?.revisions).toHaveLength(1);

      await store.putContent('dev', 'Game', '{"level":3,"color":"a"}', null);
      await store.deleteMapping('dev', 'Game');
      const third = await store.sync('dev', 'prod', ['GAME']);
      expect(third.items).toEqual([{ id: 'Game', action: 'updated', hash: expect.any(String) as string }]);
      const after = await store.getContent('prod', 'Game');
      expect(after?.revisions.map((r) => r.text)).toEqual(['{"level":2,"color":"a"}', '{"level":3,"color":"a"}']);
      expect(after?.mapping).toBeNull();
    });

    it('a mapping change alone is an update', async () => {
      await store.sync('dev', 'prod');
      await store.putMapping('dev', 'Game', { rules: [{ segment: 'x', patch: { level: 5 } }] });
      const r = await store.sync('dev', 'prod', ['Game']);
      expect(r.items[0]?.action).toBe('updated');
      expect((await store.getContent('prod', 'Game'))?.mapping).toEqual({ rules: [{ segment: 'x', patch: { level: 5 } }] });
      expect((await store.getContent('prod', 'Game'))?.revisions).toHaveLength(1);
    });

    it('keeps the target spelling of an existing id', async () => {
      await store.putContent('prod', 'GAME', '{}', null);
      const r = await store.sync('dev', 'prod', ['game']);
      expect(r.items[0]).toMatchObject({ id: 'GAME', action: 'updated' });
    });

    it('refuses unknown ids (nothing written), same env, missing env', async () => {
      const err = await rejectsWith(store.sync('dev', 'prod', ['Game', 'Nope']), 'content_not_found');
      expect(err.message).toContain('"Nope"');
      expect(await store.getContent('prod', 'Game')).toBeUndefined();
      await rejectsWith(store.sync('dev', 'dev'), 'invalid_request');
      await rejectsWith(store.sync('dev', 'zz'), 'not_found');
      await rejectsWith(store.sync('zz', 'dev'), 'not_found');
      await rejectsWith(store.sync('dev', 'prod', ['']), 'invalid_request');
    });
  });

  it.sequential('revision reader reads by id; a deleted revision reads as undefined', async () => {
    await store.putEnvironment('e');
    await store.putContent('e', 'A', '/* c */ {"a": [1, 2]}', null);
    const meta = (await store.loadDirectory()).contents[0]!.revisions[0]!;
    const reader = workerReader(store.readerUrl);
    try {
      expect(await reader.revision(meta.revId)).toEqual({ revId: meta.revId, minified: '{"a":[1,2]}', hash: meta.hash });
      expect(await reader.revision(meta.revId + 1000)).toBeUndefined();
      expect(await reader.mapping(12345)).toBeUndefined();
      await store.deleteContent('e', 'A');
      expect(await reader.revision(meta.revId)).toBeUndefined();
    } finally {
      await reader.close();
    }
  });

  it.sequential('methods fail after close', async () => {
    await store.close();
    await rejectsWith(store.listEnvironments(), 'internal');
    await rejectsWith(store.loadDirectory(), 'internal');
    await rejectsWith(store.putEnvironment('e'), 'internal');
    await store.close();
  });
});

describe('sqlite files', () => {
  let dir: string;
  let cleanup: () => void;
  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
  });
  afterEach(() => cleanup());

  it('uses WAL and keeps data across reopen', async () => {
    const url = `sqlite:${join(dir, 'rcd.db')}`;
    const a = await openStore(url);
    await a.putEnvironment('e');
    const k = await a.createKey('e');
    await a.putContent('e', 'A', '{"a":1}', null);
    await a.close();
    const b = await openStore(url);
    try {
      const d = await b.loadDirectory();
      expect(d.environments).toEqual(['e']);
      expect(d.keys[0]).toEqual({ digest: apiKeyDigest(k.key), keyId: k.id, envId: 'e' });
      expect(d.contents[0]?.id).toBe('A');
      expect(b.readerUrl).toBe(url);
    } finally {
      await b.close();
    }
    expect(readFileSync(join(dir, 'rcd.db')).subarray(18, 20)).toEqual(Buffer.from([2, 2])); // WAL in the header
  });

  it('stores API keys as SHA-256 digests only', async () => {
    const path = join(dir, 'keys.db');
    const store = await openStore(`sqlite:${path}`);
    await store.putEnvironment('e');
    const random = await store.createKey('e');
    await store.createKey('e', 'my-plain-key-xyz');
    await store.importBundle({ environments: { e: { keys: ['bundle-plain-key-1'] } } });
    await store.close(); // checkpoints the WAL into the file
    const bytes = readFileSync(path).toString('latin1');
    for (const plain of [random.key, 'my-plain-key-xyz', 'bundle-plain-key-1']) {
      expect(bytes).not.toContain(plain);
      expect(bytes).toContain(apiKeyDigest(plain));
    }
    expect(apiKeyDigest('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('refuses a store written by a newer schema version', async () => {
    const path = join(dir, 'v.db');
    const s = await openStore(`sqlite:${path}`);
    await s.close();
    const { createRequire } = await import('node:module');
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => { exec(s: string): void; close(): void };
    const raw = new Database(path);
    raw.exec('UPDATE schema_version SET version = 99');
    raw.close();
    await expect(openStore(`sqlite:${path}`)).rejects.toThrow(/schema version 99/);
  });

  it('rejects unknown URL schemes clearly', async () => {
    await rejectsWith(openStore('sqlite:'), 'invalid_request');
    await rejectsWith(openStore('memory:bad name'), 'invalid_request');
    await expect(openStore('./rcd.db')).rejects.toThrow(/sqlite:PATH/);
  });

  it('a reader on a missing file fails clearly', () => {
    expect(() => openRevisionReader(`sqlite:${join(dir, 'missing.db')}`)).toThrow(/cannot open the store/);
  });
});

describe('memory stores', () => {
  it('each memory: store is separate; memory:NAME of the readerUrl opens the same data', async () => {
    const a = await openStore('memory:');
    const b = await openStore('memory:');
    try {
      expect(a.readerUrl).not.toBe(b.readerUrl);
      await a.putEnvironment('only-in-a');
      expect(await b.listEnvironments()).toEqual([]);
      const again = await openStore(a.readerUrl);
      expect((await again.listEnvironments()).map((e) => e.id)).toEqual(['only-in-a']);
      await again.close();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a reader of a closed memory store fails clearly', async () => {
    const s = await openStore('memory:');
    const url = s.readerUrl;
    await s.close();
    expect(() => openRevisionReader(url)).toThrow(/no schema/);
  });
});

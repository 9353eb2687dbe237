/**
 * The change log on a real SQLite file and a real PostgreSQL database: every kind of write appends what it touched, in its own
 * transaction (a refused write appends nothing), key use appends nothing, a delta reads the current
 * state of what changed, and a reader behind the retained window is told to reload.
 */
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { apiKeyDigest, contentIdKey, openStore, type Store } from '../../../src/store/index.js';
import type { ChangeEntry } from '../../../src/store/types.js';
import { createDatabase } from '../../helpers/postgres.js';
import { MAPPING, rejectsWith, tempDir } from './helpers.js';

const BASE = '{"level": 1, "color": "green"}';
let store: Store;
let cleanup: () => Promise<void> | void;

/** What the log holds after `seq`, as kind/env/target triples without repeats. */
async function touched(after: number): Promise<string[]> {
  const batch = await store.changesSince(after, 10_000);
  expect(batch.complete).toBe(true);
  return [...new Set(batch.entries.map((e) => `${e.kind} ${e.envId} ${e.target}`))];
}

async function head(): Promise<number> {
  return (await store.changesSince(0, 1)).headSeq;
}

describe.each(['sqlite', 'postgres'] as const)('%s store', (kind) => {
  beforeEach(async () => {
    if (kind === 'sqlite') {
      const t = tempDir();
      cleanup = t.cleanup;
      store = await openStore(`sqlite:${join(t.dir, 'rcd.db')}`);
    } else {
      const db = await createDatabase();
      cleanup = db.drop;
      store = await openStore(db.url);
    }
  });
  afterEach(async () => {
    await store.close();
    await cleanup();
  });

  describe('change log', () => {
    it('numbers entries without gaps and gives every snapshot the sequence it reflects', async () => {
      expect((await store.loadDirectory()).seq).toBe(0);
      await store.putEnvironment('prod');
      await store.putContent('prod', 'Shop', BASE, null);
      const batch = await store.changesSince(0, 100);
      expect(batch.entries.map((e) => e.seq)).toEqual(batch.entries.map((_, i) => i + 1));
      expect(batch.headSeq).toBe(batch.entries.length);
      expect((await store.loadDirectory()).seq).toBe(batch.headSeq);
    });

    it('logs every kind of write with what it touched', async () => {
      let at = await head();
      await store.putEnvironment('prod');
      expect(await touched(at)).toEqual(['environment prod ']);

      at = await head();
      const key = await store.createKey('prod', 'a-key-of-prod');
      expect(await touched(at)).toEqual([`key prod ${key.id}`]);

      at = await head();
      await store.putContent('prod', 'Straße', BASE, null);
      expect(await touched(at)).toEqual([`content prod ${contentIdKey('Straße')}`]);

      at = await head();
      await store.putMapping('prod', 'STRASSE', MAPPING);
      expect(await touched(at)).toEqual(['content prod strasse']);
      at = await head();
      await store.deleteMapping('prod', 'strasse');
      expect(await touched(at)).toEqual(['content prod strasse']);
      await store.putContent('prod', 'Straße', '{"level": 2, "color": "green"}', null);
      at = await head();
      await store.rollback('prod', 'Straße', 1);
      expect(await touched(at)).toEqual(['content prod strasse']);

      await store.putEnvironment('dev');
      at = await head();
      await store.sync('prod', 'dev');
      expect(await touched(at)).toEqual(['content dev strasse']);

      at = await head();
      await store.revokeKey('prod', key.id);
      expect(await touched(at)).toEqual([`key prod ${key.id}`]);

      at = await head();
      await store.deleteContent('prod', 'Straße');
      expect(await touched(at)).toEqual(['content prod strasse']);

      at = await head();
      await store.importBundle({ environments: { qa: { keys: ['a-key-of-qa!'], content: { Cfg: { json: { a: 1 } } } } } });
      const imported = await touched(at);
      expect(imported).toContain('environment qa ');
      expect(imported).toContain('content qa cfg');
      expect(imported.filter((t) => t.startsWith('key qa '))).toHaveLength(1);

      // Deleting an environment logs it and, through the cascade, its keys and contents.
      at = await head();
      await store.deleteEnvironment('qa', true);
      const gone = await touched(at);
      expect(gone).toContain('environment qa ');
      expect(gone).toContain('content qa cfg');
      expect(gone.filter((t) => t.startsWith('key qa '))).toHaveLength(1);
    });

    it('appends nothing for key use, for a write that changes nothing, or for a refused write', async () => {
      await store.putEnvironment('prod');
      const key = await store.createKey('prod');
      await store.putContent('prod', 'Shop', BASE, null);
      const at = await head();
      await store.recordKeyUse([key.id], new Date().toISOString());
      expect((await store.putContent('prod', 'Shop', BASE, null)).changed).toBe(false);
      expect(await store.putEnvironment('prod')).toBe(false);
      await rejectsWith(store.putContent('prod', 'Shop', '{"level": ', null), 'invalid_content');
      await rejectsWith(store.putMapping('prod', 'Shop', { rules: [{ segment: 's', patch: { nope: { deep: 1 } }, extra: 1 }] }), 'invalid_mapping');
      await rejectsWith(store.deleteEnvironment('prod', false), 'conflict');
      expect(await head()).toBe(at);
    });

    it('reads the current state of what the entries touched, once each', async () => {
      await store.putEnvironment('prod');
      const kept = await store.createKey('prod', 'kept-key-123');
      const revoked = await store.createKey('prod', 'revoked-key-1');
      await store.putContent('prod', 'Shop', BASE, '1.2.0');
      await store.putContent('prod', 'Shop', '{"level": 3}', null);
      await store.putContent('prod', 'Gone', BASE, null);
      await store.putMapping('prod', 'Shop', { rules: [{ segment: 's', patch: { level: 4 } }] });
      await store.revokeKey('prod', revoked.id);
      await store.deleteContent('prod', 'Gone');
      const batch = await store.changesSince(0, 1000);
      const delta = await store.loadDelta(batch.entries, 0, batch.headSeq);
      expect(delta.fromSeq).toBe(0);
      expect(delta.toSeq).toBe(batch.headSeq);
      expect(delta.environments).toEqual([{ envId: 'prod', exists: true }]);
      expect(delta.keys).toEqual([
        { keyId: kept.id, envId: 'prod', key: { digest: apiKeyDigest('kept-key-123'), keyId: kept.id, envId: 'prod' } },
        { keyId: revoked.id, envId: 'prod', key: null },
      ]);
      expect(delta.contents.map((c) => [c.idLower, c.meta === null])).toEqual([
        ['shop', false],
        ['gone', true],
      ]);
      const shop = delta.contents[0]!.meta!;
      const snapshot = await store.loadDirectory();
      expect(shop).toEqual(snapshot.contents.find((c) => c.idLower === 'shop'));
      expect(shop.revisions.map((r) => r.minAppVersion)).toEqual(['1.2.0', null]);
      expect(shop.mappingRuleCount).toBe(1);
    });

    it('reads a run of content edits alone as the snapshot sees those contents, every revision in order', async () => {
      await store.putEnvironment('prod');
      await store.putContent('prod', 'Shop', BASE, '1.2.0');
      await store.putContent('prod', 'Other', '{"o": 1}', null);
      const from = await head();
      await store.putContent('prod', 'Shop', '{"level": 3}', null);
      await store.putContent('prod', 'Shop', '{"level": 4}', '2.0.0');
      await store.putMapping('prod', 'Other', { rules: [{ segment: 's', patch: { o: 2 } }] });
      await store.putContent('prod', 'New', '{"n": 1}', null);
      await store.deleteContent('prod', 'Other');
      const batch = await store.changesSince(from, 1000);
      expect(new Set(batch.entries.map((e) => e.kind === 'environment' || e.kind === 'key'))).toEqual(new Set([false]));
      const delta = await store.loadDelta(batch.entries, from, batch.headSeq);
      expect(delta.environments).toEqual([]);
      expect(delta.keys).toEqual([]);
      const snapshot = await store.loadDirectory();
      expect(delta.contents.map((c) => [c.idLower, c.meta])).toEqual([
        ['shop', snapshot.contents.find((c) => c.idLower === 'shop')],
        ['other', null],
        ['new', snapshot.contents.find((c) => c.idLower === 'new')],
      ]);
      expect(delta.contents[0]!.meta!.revisions.map((r) => r.number)).toEqual([1, 2, 3]);
    });

    it('pages through the log with a limit, and tells a reader behind the retained window to reload', async () => {
      await store.putEnvironment('prod');
      for (let i = 0; i < 10; i++) await store.putContent('prod', `Item${i}`, `{"i": ${i}}`, null);
      const first = await store.changesSince(0, 4);
      expect(first.entries).toHaveLength(4);
      const rest = await store.changesSince(first.entries[3]!.seq, 1000);
      expect([...first.entries, ...rest.entries].map((e: ChangeEntry) => e.seq)).toEqual(Array.from({ length: first.headSeq }, (_, i) => i + 1));

      const headSeq = first.headSeq;
      expect(await store.pruneChanges(3)).toBe(headSeq - 3);
      expect(await store.changesSince(headSeq - 3, 100)).toMatchObject({ complete: true, headSeq });
      expect((await store.changesSince(headSeq - 3, 100)).entries).toHaveLength(3);
      expect(await store.changesSince(headSeq - 4, 100)).toEqual({ entries: [], headSeq, complete: false });
      expect(await store.changesSince(0, 100)).toMatchObject({ complete: false });
      // The sequence keeps counting after a prune: numbers are never reused.
      await store.putContent('prod', 'Later', '{}', null);
      expect((await store.changesSince(headSeq, 10)).entries[0]!.seq).toBe(headSeq + 1);
      expect(await store.pruneChanges(1_000)).toBe(0);
    });
  });

  describe('node registry', () => {
    it('registers nodes, records their heartbeat and applied change, and removes them', async () => {
      const node = { nodeId: 'node-a', pid: 11, host: 'box-1', startedAt: new Date().toISOString(), heartbeatMs: 1_000, appliedSeq: 0 };
      await store.registerNode(node);
      await store.registerNode({ ...node, nodeId: 'node-b', pid: 12 });
      await store.heartbeat('node-a', 7, 2_000);
      expect(await store.listNodes()).toEqual([
        { ...node, heartbeatMs: 2_000, appliedSeq: 7 },
        { ...node, nodeId: 'node-b', pid: 12 },
      ]);
      // Registering again (a restart reusing its id) replaces the record.
      await store.registerNode({ ...node, pid: 13, heartbeatMs: 3_000, appliedSeq: 9 });
      expect((await store.listNodes())[0]).toMatchObject({ pid: 13, appliedSeq: 9 });
      await store.removeNode('node-a');
      expect((await store.listNodes()).map((n) => n.nodeId)).toEqual(['node-b']);
      // Heartbeats are not routing data.
      expect((await store.changesSince(0, 10)).entries).toEqual([]);
    });
  });
});

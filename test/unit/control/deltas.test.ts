/**
 * Every kind of write reaches a delivery loop's Directory through the change log, checked against a
 * Directory built from scratch: random sequences of writes on a real SQLite file, each followed by
 * the real control-thread side (Feeds: change log -> delta -> catalog bodies -> slices) talking to
 * the real delivery side (DeliveryFeed: apply in place) over a MessageChannel, then compared with a
 * fresh `loadDirectory()` build: keys -> environment, contents -> revisions and mapping, catalog
 * bodies byte for byte.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CatalogBook } from '../../../src/control/catalog.js';
import { DeliveryFeed } from '../../../src/control/feed.js';
import { Feeds } from '../../../src/control/feeds.js';
import { routedSnapshot } from '../../../src/control/routed.js';
import { isCatalogChange, type CatalogUpdate, type FeedMessage } from '../../../src/control/protocol.js';
import { Directory, MappingLibrary, revisionsOf, type CatalogView } from '../../../src/delivery/directory.js';
import { openRevisionReader, openStore, type RevisionReader, type Store } from '../../../src/store/index.js';
import { MAPPING, tempDir } from '../store/helpers.js';

const ENVS = ['prod', 'dev', 'qa'];
/** Spellings that collide caselessly, need NFC/case folding, or are special as object keys. */
const IDS = ['Shop', 'shop', 'SHOP', 'Straße', 'STRASSE', 'Kiosk', '\u212Aiosk', '123', '__proto__', 'Level_2', 'é', 'e\u0301'];
const MAPPINGS: unknown[] = [MAPPING, { rules: [{ segment: 'vip', when: { tier: 'vip' }, patch: { level: 7 } }] }, { rules: [] }];
const VERSIONS = [null, null, '1.0.0', '2.5.0'];

/** A small deterministic PRNG (mulberry32): a failing sequence can be replayed from its seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Harness {
  store: Store;
  reader: RevisionReader;
  feeds: Feeds;
  feed: DeliveryFeed;
  /** The loop's end of the feed: a second listener sees every update the loop applies. */
  loopPort: MessagePort;
  close: () => Promise<void>;
}

let cleanup: () => void;
let dir: string;
beforeEach(() => {
  const t = tempDir();
  cleanup = t.cleanup;
  dir = t.dir;
});
afterEach(() => cleanup());

async function harness(opts: { changeBatch?: number; sliceBudgetUs?: number } = {}): Promise<Harness> {
  const store = await openStore(`sqlite:${join(dir, 'rcd.db')}`);
  const reader = openRevisionReader(store.readerUrl);
  const channel = new MessageChannel();
  const feed = new DeliveryFeed(channel.port2);
  const feeds = new Feeds([channel.port1], () => undefined, () => undefined, opts);
  await feeds.publish(store);
  return {
    store,
    reader,
    feeds,
    feed,
    loopPort: channel.port2,
    close: async () => {
      feeds.close();
      feed.close();
      reader.close();
      await store.close();
    },
  };
}

/** A Directory built from scratch from the store, as a start would build it. */
async function fresh(store: Store, reader: RevisionReader): Promise<Directory> {
  const snapshot = await store.loadDirectory();
  const bodies = new Map(new CatalogBook(snapshot).allBodies().map((c) => [c.envId, c]));
  return new Directory(routedSnapshot(snapshot), new MappingLibrary(reader, () => undefined), bodies);
}

function describeDirectory(d: Directory, plainKeys: readonly string[]): unknown {
  const envs: Record<string, unknown> = {};
  for (const [envId, env] of [...d.environments].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
    const contents: Record<string, unknown> = {};
    for (const [idLower, c] of [...env.contents].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      contents[idLower] = {
        id: c.id,
        revisions: revisionsOf(c).map((r) => `${r.revId}/${r.hash}/${r.minVersion}`),
        mappingId: c.mappingId,
        ruleCount: c.mapping?.ruleCount ?? null,
        broken: c.mappingBroken,
      };
    }
    envs[envId] = { contents, catalog: Buffer.concat(env.catalog.body).toString('utf8') };
  }
  const keys = plainKeys.map((k) => {
    const v = d.lookupKey(k);
    return v === undefined ? null : `${v.keyId}@${v.env.id}`;
  });
  return { envs, keys };
}

/** The catalog a whole rebuild would send, as a value: ids as created, newest hash, d. */
async function expectedCatalogs(store: Store): Promise<Record<string, Record<string, unknown>>> {
  const snapshot = await store.loadDirectory();
  const out: Record<string, Record<string, unknown>> = {};
  for (const e of snapshot.environments) out[e] = {};
  for (const c of snapshot.contents) {
    Object.defineProperty(out[c.envId], c.id, {
      value: { h: c.revisions[c.revisions.length - 1]?.hash, d: c.mappingRuleCount > 0 },
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)]!;
}

/** One random write; refused writes (missing environment, content, ...) are part of the mix. */
async function randomWrite(rnd: () => number, store: Store, plainKeys: string[]): Promise<string> {
  const env = pick(rnd, ENVS);
  const id = pick(rnd, IDS);
  const text = (): string => `{"level": ${Math.floor(rnd() * 5)}, "color": "${pick(rnd, ['red', 'green', 'blue'])}"}`;
  const op = Math.floor(rnd() * 13);
  try {
    switch (op) {
      case 0:
        await store.putEnvironment(env);
        return `putEnvironment ${env}`;
      case 1:
        if (rnd() < 0.5) return 'skip';
        await store.deleteEnvironment(env, true);
        return `deleteEnvironment ${env}`;
      case 2: {
        const plain = `key-${randomBytes(12).toString('hex')}`;
        await store.createKey(env, plain);
        plainKeys.push(plain);
        return `createKey ${env}`;
      }
      case 3: {
        const keys = await store.listKeys(env);
        const live = keys.filter((k) => k.revokedAt === null);
        if (live.length === 0) return 'skip';
        const k = pick(rnd, live);
        await store.revokeKey(env, k.id);
        return `revokeKey ${env} ${k.id}`;
      }
      case 4:
      case 5:
        await store.putContent(env, id, text(), pick(rnd, VERSIONS));
        return `putContent ${env} ${id}`;
      case 6:
        await store.deleteContent(env, id);
        return `deleteContent ${env} ${id}`;
      case 7: {
        const detail = await store.getContent(env, id);
        if (detail === undefined) return 'skip';
        await store.rollback(env, id, pick(rnd, detail.revisions).number);
        return `rollback ${env} ${id}`;
      }
      case 8:
        await store.putMapping(env, id, pick(rnd, MAPPINGS));
        return `putMapping ${env} ${id}`;
      case 9:
        await store.deleteMapping(env, id);
        return `deleteMapping ${env} ${id}`;
      case 10: {
        const to = pick(rnd, ENVS);
        await store.sync(env, to, rnd() < 0.5 ? undefined : [id]);
        return `sync ${env} ${to}`;
      }
      default: {
        const plain = `key-${randomBytes(12).toString('hex')}`;
        const content: Record<string, unknown> = {};
        for (let i = 0; i < 3; i++) {
          Object.defineProperty(content, pick(rnd, IDS), {
            value: rnd() < 0.5 ? { text: text(), mapping: pick(rnd, MAPPINGS) } : { revisions: [{ text: text() }, { text: text(), minAppVersion: '1.2.3' }] },
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
        await store.importBundle({ environments: { [env]: { keys: [plain], content } } });
        plainKeys.push(plain);
        return `importBundle ${env}`;
      }
    }
  } catch (err) {
    return `refused (${(err as { code?: string }).code ?? (err as Error).message})`;
  }
}

/** One environment of 3,000 items (a catalog of many pieces) with one key, published to the loop. */
async function importLargeEnvironment(h: Harness): Promise<void> {
  const content: Record<string, unknown> = {};
  for (let i = 0; i < 3000; i++) content[`Item${String(i).padStart(4, '0')}`] = { text: `{"level": ${i}}` };
  await h.store.importBundle({ environments: { prod: { keys: ['a-key-of-prod-0001'], content } } });
  await h.feeds.publish(h.store);
}

/** The loop's directory (catalog bytes included) equals one built from scratch from the store. */
async function expectAgreesWithRebuild(h: Harness): Promise<void> {
  expect(describeDirectory(h.feed.directory, ['a-key-of-prod-0001'])).toEqual(describeDirectory(await fresh(h.store, h.reader), ['a-key-of-prod-0001']));
}

describe('routing deltas against a whole rebuild', () => {
  for (const seed of [1, 2, 3]) {
    it(`agree after every step of a random write sequence (seed ${seed})`, async () => {
      // A small batch and slice budget: deltas are paged and sliced on most steps.
      const h = await harness({ changeBatch: 7, sliceBudgetUs: 10 });
      const rnd = prng(seed);
      const plainKeys: string[] = [];
      const log: string[] = [];
      try {
        for (let step = 0; step < 150; step++) {
          // Fill the applied directory's plain-key cache first: a revoked key must not stay in it.
          for (const k of plainKeys) h.feed.directory.lookupKey(k);
          const directoryBefore = h.feed.directory;
          log.push(await randomWrite(rnd, h.store, plainKeys));
          await h.feeds.publish(h.store);
          // Deltas are applied in place: the same Directory object throughout.
          expect(h.feed.directory, log.join('\n')).toBe(directoryBefore);
          const want = await fresh(h.store, h.reader);
          expect(describeDirectory(h.feed.directory, plainKeys), log.join('\n')).toEqual(describeDirectory(want, plainKeys));
          expect(h.feed.directory.seq).toBe(h.feeds.appliedSeq);
        }
        // The bodies also say what the previous whole-snapshot catalog said (same ids, h and d).
        const catalogs = await expectedCatalogs(h.store);
        for (const [envId, env] of h.feed.directory.environments) {
          expect(JSON.parse(Buffer.concat(env.catalog.body).toString('utf8'))).toEqual({ catalog: catalogs[envId] });
        }
        expect(log.filter((l) => l.startsWith('importBundle')).length).toBeGreaterThan(0);
        expect(log.filter((l) => l.startsWith('deleteEnvironment')).length).toBeGreaterThan(0);
      } finally {
        await h.close();
      }
    });
  }

  it('reloads a whole snapshot when the log no longer holds what the loops need', async () => {
    const h = await harness();
    try {
      await h.store.putEnvironment('prod');
      await h.store.createKey('prod', 'a-key-of-prod-0001');
      await h.feeds.publish(h.store);
      const before = h.feed.directory;
      await h.store.putContent('prod', 'Shop', '{"level": 1}', null);
      await h.store.putContent('prod', 'Bank', '{"level": 2}', null);
      await h.store.pruneChanges(1);
      await h.feeds.publish(h.store);
      expect(h.feed.directory).not.toBe(before);
      await expectAgreesWithRebuild(h);
      // Deltas follow again from the snapshot's sequence.
      const reloaded = h.feed.directory;
      await h.store.deleteContent('prod', 'Shop');
      await h.feeds.publish(h.store);
      expect(h.feed.directory).toBe(reloaded);
      expect([...h.feed.directory.environments.get('prod')!.contents.keys()]).toEqual(['bank']);
    } finally {
      await h.close();
    }
  });

  it('puts every side back on one state with a snapshot when a loop cannot apply a delta', async () => {
    const lines: string[] = [];
    const store = await openStore(`sqlite:${join(dir, 'rcd.db')}`);
    const reader = openRevisionReader(store.readerUrl);
    const channel = new MessageChannel();
    const feed = new DeliveryFeed(channel.port2);
    const feeds = new Feeds([channel.port1], () => undefined, (line) => lines.push(line));
    try {
      await store.putEnvironment('prod');
      await store.createKey('prod', 'a-key-of-prod-0001');
      await feeds.publish(store);
      // The loop's state no longer follows the log (as after a lost update): it refuses the next delta.
      feed.directory.seq -= 1;
      const stale = feed.directory;
      await store.putContent('prod', 'Shop', '{"level": 1}', null);
      await feeds.publish(store);
      expect(lines.some((l) => l.includes('reloading the whole directory'))).toBe(true);
      expect(feed.directory).not.toBe(stale);
      expect(feed.directory.seq).toBe(feeds.appliedSeq);
      expect(describeDirectory(feed.directory, ['a-key-of-prod-0001'])).toEqual(describeDirectory(await fresh(store, reader), ['a-key-of-prod-0001']));
    } finally {
      feeds.close();
      feed.close();
      reader.close();
      await store.close();
    }
  });

  it('sends a large catalog as a change of the pieces an edit touched, whole when its pieces are cut anew', async () => {
    const h = await harness();
    try {
      await importLargeEnvironment(h);
      const held = h.feed.directory.environments.get('prod')!.catalog;
      expect(held.body.length).toBeGreaterThan(5);
      const sent: CatalogUpdate[] = [];
      h.loopPort.on('message', (m: FeedMessage) => {
        if (m.type === 'directory' && m.update.kind === 'delta') sent.push(...m.update.catalogs);
      });

      // An edit: one body piece (its block) and two gzip pieces (the block's segment, the trailer).
      await h.store.putContent('prod', 'Item1500', '{"level": "edited"}', null);
      await h.feeds.publish(h.store);
      const edit = sent.pop()!;
      expect(isCatalogChange(edit)).toBe(true);
      if (!isCatalogChange(edit)) return;
      expect([edit.body.length, edit.gzip.length, edit.bodyPieces]).toEqual([1, 2, held.body.length]);
      const now = h.feed.directory.environments.get('prod')!.catalog;
      // The pieces the change did not name are the very views the loop held.
      expect(now.body.filter((p, i) => p !== held.body[i]).length).toBe(1);
      await expectAgreesWithRebuild(h);

      // A delete and a new id within a block: still a change.
      await h.store.deleteContent('prod', 'Item0007');
      await h.store.putContent('prod', 'Item0007b', '{"level": 0}', null);
      await h.feeds.publish(h.store);
      expect(isCatalogChange(sent.pop()!)).toBe(true);
      await expectAgreesWithRebuild(h);

      // Enough new ids in one block's range to split it: the body has more pieces, so it goes whole.
      for (let i = 0; i < 600; i++) await h.store.putContent('prod', `Item2000x${String(i).padStart(3, '0')}`, '{"level": 1}', null);
      await h.feeds.publish(h.store);
      const split = sent.pop()!;
      expect(isCatalogChange(split)).toBe(false);
      expect(split.body.length).toBeGreaterThan(held.body.length);
      await expectAgreesWithRebuild(h);
    } finally {
      await h.close();
    }
  });

  it('gets a whole snapshot when a catalog change does not fit the catalog the loop holds', async () => {
    const h = await harness();
    try {
      await importLargeEnvironment(h);
      // The loop's catalog no longer has the pieces the control thread handed out (as after a lost update).
      const env = h.feed.directory.environments.get('prod') as { catalog: CatalogView };
      env.catalog = { ...env.catalog, body: env.catalog.body.slice(1) };
      const before = h.feed.directory;
      await h.store.putContent('prod', 'Item1500', '{"level": "edited"}', null);
      await h.feeds.publish(h.store);
      expect(h.feed.directory).not.toBe(before);
      await expectAgreesWithRebuild(h);
      // And changes follow again from the snapshot's bodies.
      const reloaded = h.feed.directory;
      await h.store.putContent('prod', 'Item1501', '{"level": "edited"}', null);
      await h.feeds.publish(h.store);
      expect(h.feed.directory).toBe(reloaded);
      await expectAgreesWithRebuild(h);
    } finally {
      await h.close();
    }
  });

  it('cuts a big import into slices, each within the budget, the catalog swapped with the last', async () => {
    const h = await harness({ sliceBudgetUs: 400 });
    try {
      const content: Record<string, unknown> = {};
      for (let i = 0; i < 1000; i++) content[`Item${i}`] = { text: `{"level": ${i}}` };
      await h.store.importBundle({ environments: { prod: { keys: ['a-key-of-prod-0001'], content } } });
      const seen: { contents: number; catalogs: number; last: boolean }[] = [];
      h.loopPort.on('message', (m: FeedMessage) => {
        if (m.type === 'directory' && m.update.kind === 'delta') {
          seen.push({ contents: m.update.delta.contents.count, catalogs: m.update.catalogs.length, last: m.update.last });
        }
      });
      await h.feeds.publish(h.store);
      // 400 µs at 4 µs an item: 100 items (environment and key included) per slice.
      expect(seen.length).toBe(Math.ceil(1002 / 100));
      expect(seen.every((s) => s.contents <= 100)).toBe(true);
      expect(seen.slice(0, -1).every((s) => !s.last && s.catalogs === 0)).toBe(true);
      expect(seen[seen.length - 1]).toMatchObject({ last: true, catalogs: 1 });
      expect(h.feed.directory.lookupKey('a-key-of-prod-0001')?.env.contents.size).toBe(1000);
    } finally {
      await h.close();
    }
  });
});

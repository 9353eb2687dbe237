import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RcdError } from '../../../../src/runtime/errors.js';
import { pointer, prepareImport } from '../../../../src/store/bundle/bundle.js';
import { EXPORT_NOTE } from '../../../../src/store/bundle/export.js';
import { overlap } from '../../../../src/store/bundle/write.js';
import { apiKeyDigest, openStore, type Store } from '../../../../src/store/index.js';
import { MAPPING, rejectsWith } from '../helpers.js';

const GAME_V1 = '{\n  // base\n  "level": 1,\n  "color": "green"\n}';
const GAME_V2 = '{"level": 2, "color": "green"}';

function sampleBundle(): Record<string, unknown> {
  return {
    environments: {
      prod: {
        keys: ['prod-key-0001', 'prod-key-0002'],
        content: {
          Game: { revisions: [{ text: GAME_V1 }, { text: GAME_V2, minAppVersion: '2.0.0' }], mapping: MAPPING },
          Shop: { json: { items: [1, 2], open: true } },
          News: { text: '"hello"', minAppVersion: '1.0.0' },
        },
      },
      dev: { keys: ['dev-key-0001'], content: { Game: { text: GAME_V1 } } },
      empty: {},
    },
  };
}

async function snapshot(store: Store): Promise<unknown> {
  return { dir: await store.loadDirectory(), keys: await Promise.all((await store.listEnvironments()).map((e) => store.listKeys(e.id))) };
}

async function problemsOf(store: Store, bundle: unknown): Promise<{ path: string; reason: string }[]> {
  const err = await rejectsWith(store.importBundle(bundle), 'invalid_bundle');
  return err.details as { path: string; reason: string }[];
}

describe('bundles', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openStore('memory:');
  });
  afterEach(async () => {
    await store.close();
  });

  it('imports environments, keys, content and mappings', async () => {
    const report = await store.importBundle(sampleBundle());
    expect(report).toEqual({ environmentsCreated: 3, keysAdded: 3, revisionsAdded: 5, mappingsChanged: 1, schedulesAdded: 0, rolloutsAdded: 0 });
    const dir = await store.loadDirectory();
    expect(dir.environments).toEqual(['dev', 'empty', 'prod']);
    expect(dir.keys.map((k) => [k.envId, k.digest]).sort()).toEqual(
      [
        ['dev', apiKeyDigest('dev-key-0001')],
        ['prod', apiKeyDigest('prod-key-0001')],
        ['prod', apiKeyDigest('prod-key-0002')],
      ].sort(),
    );
    const game = await store.getContent('prod', 'game');
    expect(game?.revisions.map((r) => [r.number, r.text, r.minAppVersion])).toEqual([
      [1, GAME_V1, null],
      [2, GAME_V2, '2.0.0'],
    ]);
    expect(game?.mapping).toEqual(MAPPING);
    const shop = await store.getContent('prod', 'Shop');
    expect(shop?.revisions[0]?.text).toBe('{\n  "items": [\n    1,\n    2\n  ],\n  "open": true\n}');
    expect((await store.getContent('prod', 'News'))?.revisions[0]?.minAppVersion).toBe('1.0.0');
    expect(dir.contents.find((c) => c.envId === 'prod' && c.id === 'Game')?.mappingRuleCount).toBe(2);
  });

  it('a prepared bundle is plain data: written after a structured clone (the thread boundary) as the bundle itself is', async () => {
    const report = await store.importPrepared(structuredClone(prepareImport(sampleBundle())));
    expect(report).toEqual({ environmentsCreated: 3, keysAdded: 3, revisionsAdded: 5, mappingsChanged: 1, schedulesAdded: 0, rolloutsAdded: 0 });
    const direct = await openStore('memory:');
    try {
      await direct.importBundle(sampleBundle());
      const strip = (d: Awaited<ReturnType<Store['loadDirectory']>>): unknown =>
        d.contents.map((c) => ({ ...c, revisions: c.revisions.map((r) => ({ ...r, createdAt: '' })), createdAt: '', updatedAt: '' }));
      expect(strip(await store.loadDirectory())).toEqual(strip(await direct.loadDirectory()));
      expect((await store.getContent('prod', 'Game'))?.mapping).toEqual(MAPPING);
    } finally {
      await direct.close();
    }
  });

  it('importing the same bundle again changes nothing', async () => {
    await store.importBundle(sampleBundle());
    const before = await snapshot(store);
    expect(await store.importBundle(sampleBundle())).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });
    expect(await snapshot(store)).toEqual(before);
  });

  it('appends only the revisions the store lacks; the bundle newest becomes the newest', async () => {
    await store.importBundle(sampleBundle());
    const b = sampleBundle() as { environments: { prod: { content: Record<string, unknown> } } };
    const v3 = '{"level": 3, "color": "green"}';
    b.environments.prod.content.Game = { revisions: [{ text: GAME_V1 }, { text: GAME_V2, minAppVersion: '2.0.0' }, { text: v3 }] };
    expect((await store.importBundle(b)).revisionsAdded).toBe(1);
    // Dropping the oldest from the bundle appends nothing: its list is the stored tail.
    b.environments.prod.content.Game = { revisions: [{ text: GAME_V2, minAppVersion: '2.0.0' }, { text: v3 }] };
    expect((await store.importBundle(b)).revisionsAdded).toBe(0);
    // A single entry equal to the newest: nothing; different: one revision.
    b.environments.prod.content.Game = { text: v3 };
    expect((await store.importBundle(b)).revisionsAdded).toBe(0);
    b.environments.prod.content.Game = { text: GAME_V1 };
    expect((await store.importBundle(b)).revisionsAdded).toBe(1);
    const game = await store.getContent('prod', 'Game');
    expect(game?.revisions.map((r) => r.text)).toEqual([GAME_V1, GAME_V2, v3, GAME_V1]);
    // The mapping was not mentioned: it stays.
    expect(game?.mapping).toEqual(MAPPING);
  });

  it('an admin edit after the import is overridden by the next import of the bundle (the bundle is the desired state)', async () => {
    await store.importBundle(sampleBundle());
    await store.putContent('prod', 'Shop', '{"edited":true}', null);
    expect((await store.importBundle(sampleBundle())).revisionsAdded).toBe(1);
    expect((await store.getContent('prod', 'Shop'))?.revisions.map((r) => r.number)).toEqual([1, 2, 3]);
    expect((await store.importBundle(sampleBundle())).revisionsAdded).toBe(0);
  });

  it('"mapping": null removes the mapping; a changed mapping is stored once', async () => {
    await store.importBundle(sampleBundle());
    const b = sampleBundle() as { environments: { prod: { content: { Game: Record<string, unknown> } } } };
    b.environments.prod.content.Game.mapping = { rules: [{ segment: 'all', patch: { level: 7 } }] };
    expect((await store.importBundle(b)).mappingsChanged).toBe(1);
    expect((await store.importBundle(b)).mappingsChanged).toBe(0);
    b.environments.prod.content.Game.mapping = null;
    expect((await store.importBundle(b)).mappingsChanged).toBe(1);
    expect((await store.getContent('prod', 'Game'))?.mapping).toBeNull();
    expect((await store.importBundle(b)).mappingsChanged).toBe(0);
  });

  it('keys: existing ones are skipped, a revoked key stays revoked', async () => {
    await store.importBundle(sampleBundle());
    const keys = await store.listKeys('dev');
    await store.revokeKey('dev', keys[0]!.id);
    expect((await store.importBundle(sampleBundle())).keysAdded).toBe(0);
    expect((await store.loadDirectory()).keys.some((k) => k.envId === 'dev')).toBe(false);
  });

  it('refuses an invalid bundle whole, listing every problem with its path; nothing is written', async () => {
    await store.importBundle({ environments: { other: { keys: ['taken-key-0001'] } } });
    const before = await snapshot(store);
    const bad = {
      extra: true,
      environments: {
        'bad env': {},
        prod: {
          keys: ['short', 'taken-key-0001', 'dup-key-00001', 7],
          content: {
            Broken: { text: '{\n  "a": 1,\n}' },
            Both: { text: '{}', json: {} },
            Neither: { minAppVersion: '1.0.0' },
            BadVersion: { text: '{}', minAppVersion: '1.0' },
            Revs: { revisions: [{ text: '{}' }, { json: 1, minAppVersion: 'x' }, { text: '[' }], minAppVersion: '1.0.0' },
            EmptyRevs: { revisions: [] },
            Typo: { text: '{}', minAppversion: '1.0.0' },
            BadMapping: { text: '{"a":1}', mapping: { rules: [{ segment: 's', when: { a: { $nope: 1 } }, patch: {} }] } },
            PatchMiss: { text: '{"a":1}', mapping: { rules: [{ segment: 's', patch: [{ op: 'replace', path: '/zzz/y', value: 1 }] }] } },
            Good: { text: '{"fine":true}' },
            good: { text: '{}' },
            ' padded': { text: '{}' },
          },
        },
        dev: { keys: ['dup-key-00001'], content: 'nope' },
      },
    };
    const problems = await problemsOf(store, bad);
    const at = (path: string): string[] => problems.filter((p) => p.path === path).map((p) => p.reason);
    expect(at('/extra')).toEqual(['unknown field']);
    expect(at('/environments/bad env')[0]).toContain('environment id');
    expect(at('/environments/prod/keys/0')[0]).toContain('8-256');
    expect(at('/environments/prod/keys/1')[0]).toContain('already belongs to environment "other"');
    expect(at('/environments/prod/keys/3')[0]).toContain('expected string');
    expect(at('/environments/dev/keys/0')[0]).toContain('also listed for environment "prod"');
    expect(at('/environments/dev/content')[0]).toContain('expected record');
    expect(at('/environments/prod/content/Broken/text')[0]).toContain('line 3, column 1');
    expect(at('/environments/prod/content/Both')[0]).toContain('exactly one');
    expect(at('/environments/prod/content/Neither')[0]).toContain('exactly one');
    expect(at('/environments/prod/content/BadVersion/minAppVersion')[0]).toContain('X.Y.Z');
    expect(at('/environments/prod/content/Revs/minAppVersion')[0]).toContain('on each revision');
    expect(at('/environments/prod/content/Revs/revisions/1/minAppVersion')[0]).toContain('X.Y.Z');
    expect(at('/environments/prod/content/Revs/revisions/2/text')[0]).toContain('line 1, column 2');
    expect(at('/environments/prod/content/EmptyRevs/revisions')[0]).toContain('at least one');
    expect(at('/environments/prod/content/Typo/minAppversion')).toEqual(['unknown field']);
    expect(problems.some((p) => p.path.startsWith('/environments/prod/content/BadMapping/mapping'))).toBe(true);
    expect(problems.some((p) => p.path.startsWith('/environments/prod/content/PatchMiss/mapping'))).toBe(true);
    expect(at('/environments/prod/content/good')[0]).toContain('same content id as "Good"');
    expect(at('/environments/prod/content/ padded')[0]).toContain('whitespace');
    // A key's owner is checked apart from the rest (finishImport, in the write), yet reported where a
    // one-pass check would: right after the problem of the key before it.
    const paths = problems.map((p) => p.path);
    expect(paths.indexOf('/environments/prod/keys/1')).toBe(paths.indexOf('/environments/prod/keys/0') + 1);
    // No plain key ever appears in a reason or the message.
    const err = await rejectsWith(store.importBundle(bad), 'invalid_bundle');
    expect(err.message).toContain('nothing imported');
    for (const k of ['taken-key-0001', 'dup-key-00001']) expect(JSON.stringify(problems) + err.message).not.toContain(k);
    expect(await snapshot(store)).toEqual(before);
  });

  it('refuses non-object bundles', async () => {
    expect((await problemsOf(store, null))[0]?.path).toBe('');
    expect((await problemsOf(store, []))[0]?.path).toBe('');
    expect((await problemsOf(store, {}))[0]).toMatchObject({ path: '/environments' });
  });

  it('one problem among many good entries still writes nothing', async () => {
    const b = sampleBundle() as { environments: { prod: { content: Record<string, unknown> } } };
    b.environments.prod.content.Last = { text: '{"a": }' };
    await rejectsWith(store.importBundle(b), 'invalid_bundle');
    expect(await store.listEnvironments()).toEqual([]);
    expect((await store.loadDirectory()).keys).toEqual([]);
  });

  it('export writes the bundle format without keys, and round-trips', async () => {
    await store.importBundle(sampleBundle());
    await store.putContent('prod', 'Game', '/* newest */ {"level": 4, "color": "green"}', null);
    const exported = (await store.exportBundle()) as {
      note: string;
      environments: Record<string, { keys: string[]; content: Record<string, { revisions: unknown[]; mapping?: unknown }> }>;
    };
    expect(exported.note).toBe(EXPORT_NOTE);
    expect(exported.note).toContain('API keys are not exported');
    expect(Object.keys(exported.environments)).toEqual(['dev', 'empty', 'prod']);
    const prod = exported.environments.prod!;
    expect(prod.keys).toEqual([]);
    expect(exported.environments.empty).toEqual({ keys: [], content: {} });
    expect(prod.content.Game).toEqual({
      revisions: [{ text: GAME_V1 }, { text: GAME_V2, minAppVersion: '2.0.0' }, { text: '/* newest */ {"level": 4, "color": "green"}' }],
      mapping: MAPPING,
    });
    expect(prod.content.Shop!.mapping).toBeUndefined();

    // Into the same store: nothing changes.
    const json = JSON.parse(JSON.stringify(exported)) as unknown;
    expect(await store.importBundle(json)).toEqual({ environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0, schedulesAdded: 0, rolloutsAdded: 0 });

    // Into an empty store: the same export, the same hashes.
    const copy = await openStore('memory:');
    try {
      await copy.importBundle(json);
      expect(await copy.exportBundle()).toEqual(exported);
      const hashes = async (s: Store): Promise<string[]> => (await s.loadDirectory()).contents.flatMap((c) => c.revisions.map((r) => `${c.envId}/${c.id}/${r.number}/${r.hash}`));
      expect(await hashes(copy)).toEqual(await hashes(store));
    } finally {
      await copy.close();
    }
  });

  it('ids such as __proto__ survive export and import as plain fields', async () => {
    await store.putEnvironment('__proto__');
    await store.putContent('__proto__', '__proto__', '{"x":1}', null);
    const exported = JSON.parse(JSON.stringify(await store.exportBundle())) as unknown;
    expect(JSON.stringify(exported)).toContain('"__proto__":{"keys":[],"content":{"__proto__":{"revisions":[{"text":"{\\"x\\":1}"}]}}}');
    const copy = await openStore('memory:');
    try {
      await copy.importBundle(exported);
      expect((await copy.getContent('__proto__', '__proto__'))?.revisions[0]?.text).toBe('{"x":1}');
    } finally {
      await copy.close();
    }
    expect(({} as Record<string, unknown>).keys).toBeUndefined();
  });

  it('an invalid mapping refusal names the rule in the path', async () => {
    const problems = await problemsOf(store, {
      environments: { e: { content: { A: { text: '{"a":1}', mapping: { rules: [{ segment: 'ok', patch: {} }, { segment: 'bad' }] } } } } },
    });
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => p.path.startsWith('/environments/e/content/A/mapping/rules/1'))).toBe(true);
  });
});

describe('bundle helpers', () => {
  it('overlap finds the longest stored tail equal to the bundle head', () => {
    const s = (t: string, v: string | null = null): { text: string; min_app_version: string | null } => ({ text: t, min_app_version: v });
    const w = (t: string, v: string | null = null): { text: string; minAppVersion: string | null } => ({ text: t, minAppVersion: v });
    expect(overlap([], [w('a')])).toBe(0);
    expect(overlap([s('a'), s('b')], [w('a'), w('b')])).toBe(2);
    expect(overlap([s('b')], [w('a'), w('b')])).toBe(0);
    expect(overlap([s('a'), s('b')], [w('b'), w('c')])).toBe(1);
    expect(overlap([s('a', '1.0.0')], [w('a')])).toBe(0);
    expect(overlap([s('a'), s('a')], [w('a'), w('a'), w('a')])).toBe(2);
  });

  it('pointer escapes ~ and /', () => {
    expect(pointer(['environments', 'a/b', 'c~d', 0])).toBe('/environments/a~1b/c~0d/0');
    expect(pointer([])).toBe('');
  });

  it('RcdError details of a refused bundle are sent to the client', async () => {
    const store = await openStore('memory:');
    try {
      const err = await rejectsWith(store.importBundle({ environments: { e: { content: { A: { text: '[' } } } } }), 'invalid_bundle');
      expect(err).toBeInstanceOf(RcdError);
      expect(err.status).toBe(400);
      expect(err.details).toEqual([{ path: '/environments/e/content/A/text', reason: expect.stringContaining('line 1, column 2') as string }]);
    } finally {
      await store.close();
    }
  });
});

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore } from '../../../../src/store/index.js';
import { SCHEMA_VERSION } from '../../../../src/store/sqlite/schema.js';
import { readRows, writeStoreV1 } from '../../../helpers/store-v1.js';
import { rejectsWith, tempDir } from '../helpers.js';

interface KeyRow {
  env_id: string;
  id: string;
  id_lower: string;
}

const KEYS_SQL = 'SELECT env_id, id, id_lower FROM contents ORDER BY content_pk';

describe('schema migration 2: content keys recomputed as NFC(toCasefold(NFD(id)))', () => {
  let dir: string;
  let cleanup: () => void;
  let file: string;

  beforeEach(() => {
    ({ dir, cleanup } = tempDir());
    file = join(dir, 'rcd.db');
  });

  afterEach(() => cleanup());

  it('rekeys a version-1 store: old ids are found under every spelling of the new rule, content intact', async () => {
    writeStoreV1(file, [
      { env: 'prod', id: 'Straße', text: '{"street":true}' },
      { env: 'prod', id: 'Cafe\u0301', text: '{"cafe":1}' }, // created in NFD
      { env: 'prod', id: 'ΣΊΣΥΦΟΣ', text: '{"myth":1}' },
      { env: 'prod', id: 'PlayerSettings', text: '{"level":1}' },
      { env: 'dev', id: 'STRASSE', text: '{"dev":true}' }, // another environment: no collision
    ]);
    expect(readRows<KeyRow>(file, KEYS_SQL).map((r) => r.id_lower)).toEqual(['straße', 'cafe\u0301', 'σίσυφος', 'playersettings', 'strasse']);

    const store = await openStore(`sqlite:${file}`);
    try {
      for (const spelling of ['STRASSE', 'strasse', 'STRAẞE', 'Straße', 'Stra\u00dfe'.normalize('NFD')]) {
        expect((await store.getContent('prod', spelling))?.id).toBe('Straße');
      }
      expect((await store.getContent('prod', 'Caf\u00e9'))?.revisions[0]?.text).toBe('{"cafe":1}');
      expect((await store.getContent('prod', 'σίσυφοσ'))?.id).toBe('ΣΊΣΥΦΟΣ');
      expect((await store.getContent('prod', 'playersettings'))?.id).toBe('PlayerSettings');
      expect((await store.getContent('dev', 'Straße'))?.revisions[0]?.text).toBe('{"dev":true}');
      // A put under another spelling is a new revision of the same item, not a second item.
      const put = await store.putContent('prod', 'STRASSE', '{"street":false}', null);
      expect(put).toMatchObject({ id: 'Straße', revision: 2, changed: true });
      expect((await store.listContent('prod')).map((c) => c.id).sort()).toEqual(['Cafe\u0301', 'PlayerSettings', 'Straße', 'ΣΊΣΥΦΟΣ']);
    } finally {
      await store.close();
    }
    expect(readRows<{ version: number }>(file, 'SELECT version FROM schema_version')).toEqual([{ version: SCHEMA_VERSION }]);
    expect(readRows<KeyRow>(file, KEYS_SQL).map((r) => r.id_lower)).toEqual(['strasse', 'caf\u00e9', 'σίσυφοσ', 'playersettings', 'strasse']);
  });

  it('refuses to open a store whose ids collide under the new rule, names them, and changes nothing', async () => {
    const contents = [
      { env: 'prod', id: 'STRASSE', text: '{"a":1}' },
      { env: 'prod', id: 'Straße', text: '{"b":2}' },
      { env: 'prod', id: 'Café', text: '{"c":3}' },
      { env: 'prod', id: 'Cafe\u0301', text: '{"d":4}' },
      { env: 'prod', id: 'Kiosk', text: '{"e":5}' },
      { env: 'dev', id: 'Straße', text: '{"f":6}' },
    ];
    writeStoreV1(file, contents);
    const before = readRows<KeyRow>(file, KEYS_SQL);

    const err = await rejectsWith(openStore(`sqlite:${file}`), 'content_id_conflict');
    expect(err.details).toEqual({
      collisions: [
        { environment: 'prod', key: 'strasse', ids: ['STRASSE', 'Straße'] },
        { environment: 'prod', key: 'café', ids: ['Café', 'Cafe\u0301'] },
      ],
    });
    for (const id of ['"STRASSE"', '"Straße"', '"Café"', '"prod"']) expect(err.message).toContain(id);
    expect(err.message).not.toContain('Kiosk');

    // Nothing written: still version 1 with the old keys; a second attempt refuses the same way.
    expect(readRows<{ version: number }>(file, 'SELECT version FROM schema_version')).toEqual([{ version: 1 }]);
    expect(readRows<KeyRow>(file, KEYS_SQL)).toEqual(before);
    await rejectsWith(openStore(`sqlite:${file}`), 'content_id_conflict');
  });

  it('names the first 20 groups in the message and every group in the details', async () => {
    const contents = [];
    for (let i = 0; i < 25; i++) contents.push({ env: 'prod', id: `Straße${i}`, text: '{}' }, { env: 'prod', id: `STRASSE${i}`, text: '{}' });
    writeStoreV1(file, contents);
    const err = await rejectsWith(openStore(`sqlite:${file}`), 'content_id_conflict');
    expect((err.details as { collisions: unknown[] }).collisions).toHaveLength(25);
    expect(err.message).toContain('"STRASSE19"');
    expect(err.message).not.toContain('"STRASSE20"');
    expect(err.message).toContain('and 5 more groups');
  });

  it('opens once the operator has removed all but one id of each group', async () => {
    writeStoreV1(file, [
      { env: 'prod', id: 'STRASSE', text: '{"a":1}' },
      { env: 'prod', id: 'Straße', text: '{"b":2}' },
    ]);
    await rejectsWith(openStore(`sqlite:${file}`), 'content_id_conflict');
    // What the previous rcd's DELETE /content/STRASSE does (its revisions go by cascade).
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(file);
    db.pragma('foreign_keys = ON');
    db.prepare("DELETE FROM contents WHERE id = 'STRASSE'").run();
    db.close();
    const store = await openStore(`sqlite:${file}`);
    try {
      expect((await store.getContent('prod', 'STRASSE'))?.revisions[0]?.text).toBe('{"b":2}');
    } finally {
      await store.close();
    }
  });

  it("moves a key that was another row's old key (keys change in two passes under UNIQUE (env_id, id_lower))", async () => {
    // Keys as an older rule might have left them: each row's new key is the other row's old key.
    writeStoreV1(file, [
      { env: 'e', id: 'A', text: '{"a":1}', idLower: 'b' },
      { env: 'e', id: 'B', text: '{"b":1}', idLower: 'a' },
    ]);
    const store = await openStore(`sqlite:${file}`);
    try {
      expect((await store.getContent('e', 'a'))?.revisions[0]?.text).toBe('{"a":1}');
      expect((await store.getContent('e', 'b'))?.revisions[0]?.text).toBe('{"b":1}');
    } finally {
      await store.close();
    }
  });
});

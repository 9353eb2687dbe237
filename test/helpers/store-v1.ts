/**
 * Writes a SQLite store file as rcd wrote it at schema version 1: the version-1 tables, byte for
 * byte the DDL of that release, and content keys (`id_lower`) computed with
 * String.prototype.toLowerCase, the rule of that release. Opening such a file with this rcd runs
 * the later migrations for real.
 */
import Database from 'better-sqlite3';
import { compileContent } from '../../src/store/jsonc.js';
import { apiKeyDigest } from '../../src/store/ids.js';

const SCHEMA_V1 = `
  CREATE TABLE environments (
    env_id     TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
  );
  CREATE TABLE api_keys (
    key_id       TEXT PRIMARY KEY,
    env_id       TEXT NOT NULL REFERENCES environments(env_id) ON DELETE CASCADE,
    digest       TEXT NOT NULL UNIQUE,   -- SHA-256 hex of the plain key; the plain key is never stored
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
  );
  CREATE INDEX api_keys_env ON api_keys(env_id);
  CREATE TABLE contents (
    content_pk INTEGER PRIMARY KEY AUTOINCREMENT,
    env_id     TEXT NOT NULL REFERENCES environments(env_id) ON DELETE CASCADE,
    id_lower   TEXT NOT NULL,
    id         TEXT NOT NULL,            -- as created: the catalog shows this spelling
    -- The current mapping. No foreign key: mappings reference contents (cascade on delete), and a
    -- cycle of constraints would make deleting a content item order-dependent.
    mapping_id INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (env_id, id_lower)
  );
  CREATE TABLE revisions (
    rev_id          INTEGER PRIMARY KEY AUTOINCREMENT,
    content_pk      INTEGER NOT NULL REFERENCES contents(content_pk) ON DELETE CASCADE,
    number          INTEGER NOT NULL,
    text            TEXT NOT NULL,       -- JSONC exactly as given
    minified        TEXT NOT NULL,       -- what is delivered
    hash            TEXT NOT NULL,
    min_app_version TEXT,
    created_at      TEXT NOT NULL,
    UNIQUE (content_pk, number)
  );
  CREATE TABLE mappings (
    mapping_id INTEGER PRIMARY KEY AUTOINCREMENT,
    content_pk INTEGER NOT NULL REFERENCES contents(content_pk) ON DELETE CASCADE,
    json       TEXT NOT NULL,
    rule_count INTEGER NOT NULL,
    created_at TEXT NOT NULL
  );
  CREATE INDEX mappings_content ON mappings(content_pk);
  CREATE TABLE schema_version (version INTEGER NOT NULL);
  INSERT INTO schema_version (version) VALUES (1);
`;

export interface V1Content {
  readonly env: string;
  readonly id: string;
  readonly text: string;
  /** The stored key; toLowerCase of the id unless given (to simulate any older key). */
  readonly idLower?: string;
}

/** Creates `path` as a version-1 store holding `contents` (one revision each) and plain `keys` per environment. */
export function writeStoreV1(path: string, contents: readonly V1Content[], keys: Readonly<Record<string, string>> = {}): void {
  const db = new Database(path);
  try {
    db.pragma('journal_mode = WAL');
    db.exec(SCHEMA_V1);
    const at = '2026-01-01T00:00:00.000Z';
    const envs = new Set([...contents.map((c) => c.env), ...Object.keys(keys)]);
    const insertEnv = db.prepare('INSERT INTO environments (env_id, created_at) VALUES (?, ?)');
    for (const env of envs) insertEnv.run(env, at);
    const insertKey = db.prepare('INSERT INTO api_keys (key_id, env_id, digest, created_at) VALUES (?, ?, ?, ?)');
    let n = 0;
    for (const [env, key] of Object.entries(keys)) insertKey.run(`key_${String(++n).padStart(16, '0')}`, env, apiKeyDigest(key), at);
    const insertContent = db.prepare('INSERT INTO contents (env_id, id_lower, id, mapping_id, created_at, updated_at) VALUES (?, ?, ?, NULL, ?, ?)');
    const insertRevision = db.prepare(
      'INSERT INTO revisions (content_pk, number, text, minified, hash, min_app_version, created_at) VALUES (?, 1, ?, ?, ?, NULL, ?)',
    );
    for (const c of contents) {
      const pk = insertContent.run(c.env, c.idLower ?? c.id.toLowerCase(), c.id, at, at).lastInsertRowid;
      const compiled = compileContent(c.text);
      insertRevision.run(pk, c.text, compiled.minified, compiled.hash, at);
    }
  } finally {
    db.close();
  }
}

/** Reads one table of a store file without rcd (what is on disk, whatever rcd thinks of it). */
export function readRows<T>(path: string, sql: string): T[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

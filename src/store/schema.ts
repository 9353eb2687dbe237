/**
 * The store's tables and their migrations. `schema_version` holds one row: the number of migrations
 * applied. Opening a store applies the missing ones, each in its own transaction; a store written by
 * a newer rcd (a higher version) is refused rather than guessed at.
 *
 * Revisions and mappings use AUTOINCREMENT so that their ids are never reused, even after a delete:
 * worker caches are keyed by these ids and must never see a recycled one.
 */
import { RcdError } from '../errors.js';
import type { Database } from './driver.js';

const MIGRATIONS: readonly string[] = [
  `
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
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const read = db.prepare<{ version: number }>('SELECT version FROM schema_version');
  const clear = db.prepare('DELETE FROM schema_version');
  const write = db.prepare('INSERT INTO schema_version (version) VALUES (?)');
  // One migration per transaction, the version re-read under the write lock: two processes opening
  // the same file at once cannot both apply a migration.
  const step = db.transaction((): boolean => {
    const row = read.get();
    const version = row === undefined ? 0 : row.version;
    if (version > MIGRATIONS.length) {
      throw new RcdError(
        'internal',
        `the store has schema version ${version}, this rcd knows versions up to ${MIGRATIONS.length}: upgrade rcd`,
      );
    }
    if (version === MIGRATIONS.length) return false;
    db.exec(MIGRATIONS[version]);
    clear.run();
    write.run(version + 1);
    return true;
  });
  while (step.immediate()) {
    // next migration
  }
}

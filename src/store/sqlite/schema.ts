/**
 * The store's tables and their migrations. `schema_version` holds one row: the number of migrations
 * applied. Opening a store applies the missing ones, each in its own transaction; a store written by
 * a newer rcd (a higher version) is refused rather than guessed at.
 *
 * Revisions and mappings use AUTOINCREMENT so that their ids are never reused, even after a delete:
 * worker caches are keyed by these ids and must never see a recycled one.
 */
import { RcdError } from '../../runtime/errors.js';
import type { Database } from './driver.js';
import { contentIdKey } from '../ids.js';

/** A migration: SQL to run, or a function for what SQL alone cannot compute. */
type Migration = string | ((db: Database) => void);

const MIGRATIONS: readonly Migration[] = [
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
  // Content keys were String.prototype.toLowerCase; they are now contentIdKey's caseless key.
  rekeyContents,
  // The change log: every write that changes routing data appends, in its own transaction, one
  // entry per object it touched. Triggers, not calls in the store's code: no write path (the Store
  // methods, bundle import, a future one) can forget it. Foreign-key cascades fire the child
  // tables' triggers too, so deleting an environment logs its keys and contents. Key use
  // (last_used_at) is not routing data and logs nothing.
  `
  CREATE TABLE change_log (
    seq    INTEGER PRIMARY KEY AUTOINCREMENT,
    kind   TEXT NOT NULL,                -- environment | key | content
    env_id TEXT NOT NULL,
    target TEXT NOT NULL                 -- key id, content key (id_lower), or '' for an environment
  );
  CREATE TRIGGER change_environment_insert AFTER INSERT ON environments
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('environment', NEW.env_id, ''); END;
  CREATE TRIGGER change_environment_delete AFTER DELETE ON environments
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('environment', OLD.env_id, ''); END;
  CREATE TRIGGER change_key_insert AFTER INSERT ON api_keys
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('key', NEW.env_id, NEW.key_id); END;
  CREATE TRIGGER change_key_update AFTER UPDATE OF env_id, digest, revoked_at ON api_keys
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('key', NEW.env_id, NEW.key_id); END;
  CREATE TRIGGER change_key_delete AFTER DELETE ON api_keys
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('key', OLD.env_id, OLD.key_id); END;
  CREATE TRIGGER change_content_insert AFTER INSERT ON contents
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('content', NEW.env_id, NEW.id_lower); END;
  CREATE TRIGGER change_content_update AFTER UPDATE ON contents
    BEGIN
      INSERT INTO change_log (kind, env_id, target) SELECT 'content', OLD.env_id, OLD.id_lower
        WHERE OLD.id_lower IS NOT NEW.id_lower OR OLD.env_id IS NOT NEW.env_id;
      INSERT INTO change_log (kind, env_id, target) VALUES ('content', NEW.env_id, NEW.id_lower);
    END;
  CREATE TRIGGER change_content_delete AFTER DELETE ON contents
    BEGIN INSERT INTO change_log (kind, env_id, target) VALUES ('content', OLD.env_id, OLD.id_lower); END;
  `,
  // Every running rcd serve on this store registers as a node and records the change it has applied;
  // a writer waits for the live ones (heartbeat) to reach its change.
  `
  CREATE TABLE nodes (
    node_id      TEXT PRIMARY KEY,
    pid          INTEGER NOT NULL,
    host         TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_ms INTEGER NOT NULL,       -- Unix ms of the last heartbeat
    applied_seq  INTEGER NOT NULL        -- the change-log seq its delivery loops have applied
  );
  `,
  // The webhook outbox: one row per delivery (an event to a hook), inserted by the write that made
  // the change, in its transaction. Delivered rows are deleted; dead letters stay (bounded).
  `
  CREATE TABLE webhook_outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,  -- delivery order
    id              TEXT NOT NULL UNIQUE,               -- the webhook-id header
    hook_id         TEXT NOT NULL,
    event           TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_ms INTEGER NOT NULL,                   -- due at (Unix ms); a claim leases it by moving it on
    last_error      TEXT,
    dead_at         TEXT
  );
  CREATE INDEX webhook_outbox_due ON webhook_outbox(next_attempt_ms) WHERE dead_at IS NULL;
  CREATE INDEX webhook_outbox_dead ON webhook_outbox(dead_at) WHERE dead_at IS NOT NULL;
  `,
  // Scheduled changes (src/store/schedule/): a change set with the time it takes effect, applied in
  // the transaction that flips its status (exactly once); the items it touches, for the item filter
  // and for the pending changes a rehearsal replays; rollouts (their steps are schedules); and the
  // applier's lease (one node of the store runs it).
  `
  CREATE TABLE schedules (
    schedule_id   TEXT PRIMARY KEY,
    env_id        TEXT NOT NULL,
    due_ms        INTEGER NOT NULL,
    ops           TEXT NOT NULL,
    note          TEXT NOT NULL,
    status        TEXT NOT NULL,       -- pending | paused | applied | failed | cancelled
    rollout_id    TEXT,
    step          INTEGER,
    created_at    TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    token_id      TEXT NOT NULL,
    settled_at    TEXT,
    late_ms       INTEGER,
    error_code    TEXT,
    error_message TEXT,
    result        TEXT
  );
  CREATE INDEX schedules_due ON schedules(due_ms, schedule_id) WHERE status = 'pending';
  CREATE INDEX schedules_env ON schedules(env_id, due_ms);
  CREATE INDEX schedules_rollout ON schedules(rollout_id) WHERE rollout_id IS NOT NULL;
  CREATE INDEX schedules_token ON schedules(token_id) WHERE status IN ('pending', 'paused');
  CREATE TABLE schedule_items (
    schedule_id TEXT NOT NULL,
    env_id      TEXT NOT NULL,
    id_lower    TEXT NOT NULL,         -- a content key, or '' for every item (a sync without ids)
    PRIMARY KEY (schedule_id, env_id, id_lower)
  );
  CREATE INDEX schedule_items_item ON schedule_items(env_id, id_lower);
  CREATE TABLE rollouts (
    rollout_id TEXT PRIMARY KEY,
    env_id     TEXT NOT NULL,
    id_lower   TEXT NOT NULL,
    content_id TEXT NOT NULL,
    rule       INTEGER NOT NULL,
    segment    TEXT NOT NULL,
    variant    TEXT,
    start      INTEGER NOT NULL,
    before     TEXT NOT NULL,
    steps      TEXT NOT NULL,
    status     TEXT NOT NULL,          -- active | paused | rolled_back | cancelled
    note       TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    token_id   TEXT NOT NULL
  );
  CREATE INDEX rollouts_env ON rollouts(env_id, rollout_id);
  CREATE TABLE leases (
    name     TEXT PRIMARY KEY,
    holder   TEXT NOT NULL,
    until_ms INTEGER NOT NULL
  );
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
        'store_schema_too_new',
        `the store has schema version ${version}, this rcd knows versions up to ${MIGRATIONS.length}: upgrade rcd`,
      );
    }
    if (version === MIGRATIONS.length) return false;
    const migration = MIGRATIONS[version]!;
    if (typeof migration === 'string') db.exec(migration);
    else migration(db);
    clear.run();
    write.run(version + 1);
    return true;
  });
  while (step.immediate()) {
    // next migration
  }
}

/**
 * Recomputes every content's key (`id_lower`) with contentIdKey. When the rule changes, ids that
 * were distinct can become one id (`STRASSE` and `Straße`, `Cafe\u0301` and `Café`, `σίσυφος` and
 * `σίσυφοσ`, in one environment). Merging them would silently drop content a client may be
 * fetching, and picking one would be a guess: the migration refuses instead, naming every such
 * group, and the transaction leaves the store as it was (the previous rcd still opens it).
 */
function rekeyContents(db: Database): void {
  const rows = db.prepare<{ content_pk: number; env_id: string; id: string; id_lower: string }>(
    'SELECT content_pk, env_id, id, id_lower FROM contents ORDER BY env_id, content_pk',
  ).all();
  const byKey = new Map<string, { envId: string; key: string; ids: string[] }>();
  const changed: { pk: number; key: string }[] = [];
  for (const r of rows) {
    const key = contentIdKey(r.id);
    const slot = r.env_id + '\0' + key;
    const group = byKey.get(slot);
    if (group === undefined) byKey.set(slot, { envId: r.env_id, key, ids: [r.id] });
    else group.ids.push(r.id);
    if (key !== r.id_lower) changed.push({ pk: r.content_pk, key });
  }
  const collisions = [...byKey.values()].filter((g) => g.ids.length > 1);
  if (collisions.length > 0) throw contentIdCollision(collisions);
  // Two passes: a row's new key may be another row's old one, and UNIQUE (env_id, id_lower) is
  // checked per statement. No id holds a NUL (contentIdProblem refuses control characters), so the
  // interim keys cannot meet a real one.
  const set = db.prepare('UPDATE contents SET id_lower = ? WHERE content_pk = ?');
  for (const c of changed) set.run(`\0${c.pk}`, c.pk);
  for (const c of changed) set.run(c.key, c.pk);
}

const MAX_GROUPS_NAMED = 20;

function contentIdCollision(groups: { envId: string; key: string; ids: string[] }[]): RcdError {
  // The message names the first groups (a log line stays readable); details hold all of them.
  const shown = groups.slice(0, MAX_GROUPS_NAMED);
  const more = groups.length > shown.length ? `; and ${groups.length - shown.length} more groups (see details)` : '';
  const listed =
    shown.map((g) => `environment ${JSON.stringify(g.envId)}: ${g.ids.map((id) => JSON.stringify(id)).join(', ')}`).join('; ') + more;
  return new RcdError(
    'content_id_conflict',
    `this store cannot be upgraded: content ids are now compared after Unicode normalisation and case folding ` +
      `(docs/api.md, "Content ids"), and these ids of one environment would become one id: ${listed}. ` +
      `Nothing was changed. With the previous rcd version, keep one id of each group (delete the others, or ` +
      `re-create them under ids that stay distinct and delete the old ones), then start this version again.`,
    { collisions: groups.map((g) => ({ environment: g.envId, key: g.key, ids: g.ids })) },
  );
}

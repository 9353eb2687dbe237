/**
 * The PostgreSQL store's tables and their migrations: the same tables, change log and node registry
 * as the SQLite store (src/store/sqlite/schema.ts), plus the admin state (audit, webhooks), which a
 * SQLite store keeps in its own tables of the same file and a fleet must share.
 *
 * `schema_version` holds one row: the number of migrations applied. Opening a store applies the
 * missing ones in one transaction under an advisory lock, so nodes starting together cannot both
 * apply one; a database written by a newer rcd (a higher version) is refused with store_schema_too_new.
 *
 * The change log. SQLite numbers entries with AUTOINCREMENT under its single writer, so a reader
 * that read up to seq N never later finds an entry numbered N or less. A PostgreSQL sequence alone
 * does not give that (two transactions may commit in either order), so the logging function first
 * takes the store's write lock (WRITE_LOCK, an advisory lock held until commit; the store's writes
 * take it before anything else, so for them it is already held): numbers are drawn by one writer
 * at a time and committed in their order. The head of the log is its highest visible seq, read in
 * the reader's own snapshot, so an uncommitted writer's numbers are never announced. A rolled-back
 * write leaves a gap, which readers treat as nothing (at worst, a gap right after a reader's seq at
 * the start of a pruned log makes it reload a snapshot). A sequence, not a counter row: every
 * update of one row in one transaction adds a version the next update walks, so a counter slows a
 * large write down with each entry.
 *
 * Every logged entry also sends `NOTIFY rcd_changes` (one per transaction: PostgreSQL folds equal
 * notifications of one transaction), delivered at commit to every listening node.
 */
import type { Sql } from './connection.js';
import { transaction } from './transaction.js';
import { RcdError } from '../../runtime/errors.js';

/** The channel every node LISTENs on. */
export const CHANGE_CHANNEL = 'rcd_changes';
/** pg_advisory_xact_lock keys: store writes, and migrations. */
export const WRITE_LOCK = 7_301_001; // also written in rcd_log_change below
const MIGRATION_LOCK = 7_301_002;

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE environments (
    env_id     text PRIMARY KEY,
    created_at text NOT NULL
  );
  CREATE TABLE api_keys (
    key_id       text PRIMARY KEY,
    env_id       text NOT NULL REFERENCES environments(env_id) ON DELETE CASCADE,
    digest       text NOT NULL UNIQUE,
    created_at   text NOT NULL,
    last_used_at text,
    revoked_at   text
  );
  CREATE INDEX api_keys_env ON api_keys(env_id);
  CREATE TABLE contents (
    content_pk bigserial PRIMARY KEY,
    env_id     text NOT NULL REFERENCES environments(env_id) ON DELETE CASCADE,
    id_lower   text NOT NULL,
    id         text NOT NULL,
    mapping_id bigint,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    UNIQUE (env_id, id_lower)
  );
  CREATE TABLE revisions (
    rev_id          bigserial PRIMARY KEY,
    content_pk      bigint NOT NULL REFERENCES contents(content_pk) ON DELETE CASCADE,
    number          integer NOT NULL,
    text            text NOT NULL,
    minified        text NOT NULL,
    hash            text NOT NULL,
    min_app_version text,
    created_at      text NOT NULL,
    UNIQUE (content_pk, number)
  );
  CREATE TABLE mappings (
    mapping_id bigserial PRIMARY KEY,
    content_pk bigint NOT NULL REFERENCES contents(content_pk) ON DELETE CASCADE,
    json       text NOT NULL,
    rule_count integer NOT NULL,
    created_at text NOT NULL
  );
  CREATE INDEX mappings_content ON mappings(content_pk);

  CREATE SEQUENCE change_seq;
  CREATE TABLE change_log (
    seq    bigint PRIMARY KEY,
    kind   text NOT NULL,
    env_id text NOT NULL,
    target text NOT NULL
  );
  CREATE FUNCTION rcd_log_change(k text, e text, t text) RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM pg_advisory_xact_lock(7301001);
    INSERT INTO change_log (seq, kind, env_id, target) VALUES (nextval('change_seq'), k, e, t);
    PERFORM pg_notify('rcd_changes', '');
  END $$;
  CREATE FUNCTION rcd_environment_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' THEN PERFORM rcd_log_change('environment', OLD.env_id, '');
    ELSE PERFORM rcd_log_change('environment', NEW.env_id, ''); END IF;
    RETURN NULL;
  END $$;
  CREATE FUNCTION rcd_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' THEN PERFORM rcd_log_change('key', OLD.env_id, OLD.key_id);
    ELSE PERFORM rcd_log_change('key', NEW.env_id, NEW.key_id); END IF;
    RETURN NULL;
  END $$;
  CREATE FUNCTION rcd_content_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'DELETE' THEN
      PERFORM rcd_log_change('content', OLD.env_id, OLD.id_lower);
      RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND (OLD.id_lower IS DISTINCT FROM NEW.id_lower OR OLD.env_id IS DISTINCT FROM NEW.env_id) THEN
      PERFORM rcd_log_change('content', OLD.env_id, OLD.id_lower);
    END IF;
    PERFORM rcd_log_change('content', NEW.env_id, NEW.id_lower);
    RETURN NULL;
  END $$;
  CREATE TRIGGER change_environment AFTER INSERT OR DELETE ON environments
    FOR EACH ROW EXECUTE FUNCTION rcd_environment_changed();
  CREATE TRIGGER change_key AFTER INSERT OR DELETE OR UPDATE OF env_id, digest, revoked_at ON api_keys
    FOR EACH ROW EXECUTE FUNCTION rcd_key_changed();
  CREATE TRIGGER change_content AFTER INSERT OR UPDATE OR DELETE ON contents
    FOR EACH ROW EXECUTE FUNCTION rcd_content_changed();

  CREATE TABLE nodes (
    node_id      text PRIMARY KEY,
    pid          integer NOT NULL,
    host         text NOT NULL,
    started_at   text NOT NULL,
    heartbeat_ms bigint NOT NULL,
    applied_seq  bigint NOT NULL
  );

  CREATE TABLE admin_audit (
    id       bigserial PRIMARY KEY,
    at       text NOT NULL,
    actor    text NOT NULL,
    token_id text NOT NULL,
    action   text NOT NULL,
    env      text,
    target   text,
    detail   text NOT NULL
  );
  CREATE TABLE admin_webhooks (
    id            text PRIMARY KEY,
    url           text NOT NULL,
    events        text NOT NULL,
    secret_sealed text NOT NULL,
    created_at    text NOT NULL
  );
  `,
  // Named admin tokens (src/admin/server/access.ts): digests only; a name is unique among live tokens.
  `
  CREATE TABLE admin_tokens (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    digest     text NOT NULL UNIQUE,
    role       text NOT NULL,
    scope      text NOT NULL,
    created_at text NOT NULL,
    created_by text NOT NULL,
    revoked_at text
  );
  CREATE UNIQUE INDEX admin_tokens_live_name ON admin_tokens (name) WHERE revoked_at IS NULL;
  `,
  // The webhook outbox (the SQLite schema says why), shared by every node: a claim takes rows with
  // FOR UPDATE SKIP LOCKED, so each delivery is attempted by one node at a time.
  `
  CREATE TABLE webhook_outbox (
    seq             bigserial PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    hook_id         text NOT NULL,
    event           text NOT NULL,
    body            text NOT NULL,
    created_at      text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_ms bigint NOT NULL,
    last_error      text,
    dead_at         text
  );
  CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_ms) WHERE dead_at IS NULL;
  CREATE INDEX webhook_outbox_dead ON webhook_outbox (dead_at) WHERE dead_at IS NOT NULL;
  `,
  // Scheduled changes, their items, rollouts and the applier's lease (the SQLite schema says why).
  `
  CREATE TABLE schedules (
    schedule_id   text PRIMARY KEY,
    env_id        text NOT NULL,
    due_ms        bigint NOT NULL,
    ops           text NOT NULL,
    note          text NOT NULL,
    status        text NOT NULL,
    rollout_id    text,
    step          integer,
    created_at    text NOT NULL,
    created_by    text NOT NULL,
    token_id      text NOT NULL,
    settled_at    text,
    late_ms       bigint,
    error_code    text,
    error_message text,
    result        text
  );
  CREATE INDEX schedules_due ON schedules (due_ms, schedule_id) WHERE status = 'pending';
  CREATE INDEX schedules_env ON schedules (env_id, due_ms);
  CREATE INDEX schedules_rollout ON schedules (rollout_id) WHERE rollout_id IS NOT NULL;
  CREATE INDEX schedules_token ON schedules (token_id) WHERE status IN ('pending', 'paused');
  CREATE TABLE schedule_items (
    schedule_id text NOT NULL,
    env_id      text NOT NULL,
    id_lower    text NOT NULL,
    PRIMARY KEY (schedule_id, env_id, id_lower)
  );
  CREATE INDEX schedule_items_item ON schedule_items (env_id, id_lower);
  CREATE TABLE rollouts (
    rollout_id text PRIMARY KEY,
    env_id     text NOT NULL,
    id_lower   text NOT NULL,
    content_id text NOT NULL,
    rule       integer NOT NULL,
    segment    text NOT NULL,
    variant    text,
    start      integer NOT NULL,
    before     text NOT NULL,
    steps      text NOT NULL,
    status     text NOT NULL,
    note       text NOT NULL,
    created_at text NOT NULL,
    created_by text NOT NULL,
    token_id   text NOT NULL
  );
  CREATE INDEX rollouts_env ON rollouts (env_id, rollout_id);
  CREATE TABLE leases (
    name     text PRIMARY KEY,
    holder   text NOT NULL,
    until_ms bigint NOT NULL
  );
  `,
];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** Applies the missing migrations; refuses a database of a newer schema than this rcd knows. */
export async function migrate(sql: Sql, known: readonly string[] = MIGRATIONS): Promise<void> {
  await transaction(sql, async (tx) => {
    await tx.unsafe('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.unsafe('CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)');
    const rows = await tx.unsafe<{ version: number }[]>('SELECT version FROM schema_version');
    const version = rows[0]?.version ?? 0;
    if (version > known.length) {
      throw new RcdError(
        'store_schema_too_new',
        `the store has schema version ${version}, this rcd knows versions up to ${known.length}: upgrade rcd`,
      );
    }
    for (let v = version; v < known.length; v++) await tx.unsafe(known[v]!);
    if (version === known.length) return;
    await tx.unsafe('DELETE FROM schema_version');
    await tx.unsafe('INSERT INTO schema_version (version) VALUES ($1)', [known.length]);
  });
}

/** For tests of the upgrade path: the migrations, to apply a prefix of them. */
export const PG_MIGRATIONS = MIGRATIONS;

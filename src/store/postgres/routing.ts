/**
 * Routing data in the PostgreSQL store: the whole snapshot, the change log after a sequence, the
 * current state of what a run of entries touched (a delta) and the node registry. Same results as
 * the SQLite store's routing.ts; each read runs in the caller's (repeatable-read) transaction, so
 * what it returns is one consistent state.
 */
import { CONTENT_COLUMNS, REVISION_COLUMNS, contentMeta, revisionMeta, type ContentMetaRow, type RevisionMetaRow } from '../rows.js';
import type {
  ChangeBatch,
  ChangeEntry,
  ChangeKind,
  ContentMeta,
  DirectorySnapshot,
  KeyDigest,
  NodeRecord,
  RevisionMeta,
  RoutingDelta,
} from '../types.js';
import type { Sql, Tx } from './connection.js';

/** The newest entry this transaction sees (schema.ts: never an uncommitted writer's number). */
async function headSeq(tx: Tx | Sql): Promise<number> {
  const rows = await tx.unsafe<{ seq: number | null }[]>('SELECT max(seq) AS seq FROM change_log', [], { prepare: true });
  return rows[0]?.seq ?? 0;
}

export async function snapshot(tx: Tx): Promise<DirectorySnapshot> {
  const seq = await headSeq(tx);
  const environments = (await tx.unsafe<{ env_id: string }[]>('SELECT env_id FROM environments ORDER BY env_id COLLATE "C"')).map((r) => r.env_id);
  const keys: KeyDigest[] = (
    await tx.unsafe<{ digest: string; key_id: string; env_id: string }[]>(
      'SELECT digest, key_id, env_id FROM api_keys WHERE revoked_at IS NULL ORDER BY key_id COLLATE "C"',
    )
  ).map((r) => ({ digest: r.digest, keyId: r.key_id, envId: r.env_id }));
  const revs = new Map<number, RevisionMeta[]>();
  for (const r of await tx.unsafe<RevisionMetaRow[]>(`SELECT ${REVISION_COLUMNS} ORDER BY content_pk, number`)) {
    let list = revs.get(r.content_pk);
    if (list === undefined) {
      list = [];
      revs.set(r.content_pk, list);
    }
    list.push(revisionMeta(r));
  }
  const contents = (await tx.unsafe<ContentMetaRow[]>(`SELECT ${CONTENT_COLUMNS} ORDER BY c.env_id COLLATE "C", c.id_lower COLLATE "C"`)).map((c) =>
    contentMeta(c, revs.get(c.content_pk) ?? []),
  );
  return { seq, environments, keys, contents };
}

/**
 * One statement, so one snapshot without a transaction around it: the head, the oldest entry and the
 * entries after afterSeq. It runs after every commit on every node and once a second when idle, so
 * the BEGIN and COMMIT round trips a transaction would add are worth saving.
 */
export async function changesSince(sql: Tx | Sql, afterSeq: number, limit: number): Promise<ChangeBatch> {
  const rows = await sql.unsafe<{ head: number | null; oldest: number | null; seq: number | null; kind: string | null; env_id: string | null; target: string | null }[]>(
    `WITH h AS (SELECT max(seq) AS head, min(seq) AS oldest FROM change_log)
     SELECT h.head, h.oldest, c.seq, c.kind, c.env_id, c.target
       FROM h LEFT JOIN LATERAL (SELECT seq, kind, env_id, target FROM change_log WHERE seq > $1 ORDER BY seq LIMIT $2) c ON true
      ORDER BY c.seq`,
    [afterSeq, limit],
    { prepare: true },
  );
  const head = rows[0]?.head ?? 0;
  if (afterSeq >= head) return { entries: [], headSeq: head, complete: true };
  const oldest = rows[0]?.oldest ?? null;
  // Numbered in commit order (schema.ts): the log holds everything after afterSeq when its oldest
  // entry is no later than afterSeq + 1 (a rollback's gap there costs a needless reload, no loss).
  if (oldest === null || oldest > afterSeq + 1) return { entries: [], headSeq: head, complete: false };
  const entries: ChangeEntry[] = [];
  for (const r of rows) {
    if (r.seq !== null) entries.push({ seq: r.seq, kind: r.kind as ChangeKind, envId: r.env_id!, target: r.target! });
  }
  return { entries, headSeq: head, complete: true };
}

/** The current state of every object the entries touched, each once, read in a few set queries. */
/**
 * Whether reading the delta of `entries` takes more than one statement (then it must run in one
 * repeatable-read transaction to see one state). A run of content edits, the common case, is one
 * statement and runs without BEGIN and COMMIT: three of a catch-up's five round trips.
 */
export function deltaNeedsTransaction(entries: readonly ChangeEntry[]): boolean {
  let environments = 0;
  let keys = 0;
  let contents = 0;
  for (const e of entries) {
    if (e.kind === 'environment') environments = 1;
    else if (e.kind === 'key') keys = 1;
    else contents = 1;
  }
  return environments + keys + contents > 1;
}

/** A content row and one of its revisions (null columns for a content without one). */
type ContentRevisionRow = ContentMetaRow & {
  rev_id: number | null;
  number: number | null;
  hash: string | null;
  min_app_version: string | null;
  rev_created_at: string | null;
};

/** Contents by (env, id) with their revisions, in one statement: a row per revision, in order. */
const CONTENTS_WITH_REVISIONS = `SELECT c.content_pk, c.env_id, c.id_lower, c.id, c.mapping_id, c.created_at, c.updated_at, m.rule_count,
       r.rev_id, r.number, r.hash, r.min_app_version, r.created_at AS rev_created_at
  FROM contents c
  LEFT JOIN mappings m ON m.mapping_id = c.mapping_id
  JOIN unnest($1::text[], $2::text[]) AS t(env_id, id_lower) ON t.env_id = c.env_id AND t.id_lower = c.id_lower
  LEFT JOIN revisions r ON r.content_pk = c.content_pk
 ORDER BY c.content_pk, r.number`;

export async function delta(tx: Tx | Sql, entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): Promise<RoutingDelta> {
  const envIds = new Set<string>();
  const keyIds = new Set<string>();
  const contentSlots = new Map<string, { envId: string; idLower: string }>();
  for (const e of entries) {
    if (e.kind === 'environment') envIds.add(e.envId);
    else if (e.kind === 'key') keyIds.add(`${e.envId}\0${e.target}`);
    else contentSlots.set(`${e.envId}\0${e.target}`, { envId: e.envId, idLower: e.target });
  }
  // A kind the entries do not name costs no query: a content edit reads contents and revisions only.
  const existing = new Set(
    envIds.size === 0
      ? []
      : (await tx.unsafe<{ env_id: string }[]>('SELECT env_id FROM environments WHERE env_id = ANY($1::text[])', [[...envIds]])).map((r) => r.env_id),
  );
  const environments = [...envIds].map((envId) => ({ envId, exists: existing.has(envId) }));

  const keyTargets = [...keyIds].map((s) => s.split('\0') as [string, string]);
  const keyRows = new Map(
    (keyTargets.length === 0
      ? []
      : await tx.unsafe<{ digest: string; key_id: string; env_id: string; revoked_at: string | null }[]>(
          'SELECT digest, key_id, env_id, revoked_at FROM api_keys WHERE key_id = ANY($1::text[])',
          [keyTargets.map((k) => k[1])],
        )
    ).map((r) => [r.key_id, r]),
  );
  const keys = keyTargets.map(([envId, keyId]) => {
    const row = keyRows.get(keyId);
    const live = row !== undefined && row.revoked_at === null && row.env_id === envId;
    return { keyId, envId, key: live ? { digest: row.digest, keyId: row.key_id, envId: row.env_id } : null };
  });

  const slots = [...contentSlots.values()];
  const rows =
    slots.length === 0
      ? []
      : await tx.unsafe<ContentRevisionRow[]>(CONTENTS_WITH_REVISIONS, [slots.map((s) => s.envId), slots.map((s) => s.idLower)], { prepare: true });
  const contentRows: ContentMetaRow[] = [];
  const revs = new Map<number, RevisionMeta[]>();
  for (const r of rows) {
    let list = revs.get(r.content_pk);
    if (list === undefined) {
      list = [];
      revs.set(r.content_pk, list);
      contentRows.push(r);
    }
    if (r.rev_id !== null) {
      list.push(
        revisionMeta({ content_pk: r.content_pk, rev_id: r.rev_id, number: r.number!, hash: r.hash!, min_app_version: r.min_app_version, created_at: r.rev_created_at! }),
      );
    }
  }
  const bySlot = new Map(contentRows.map((c) => [`${c.env_id}\0${c.id_lower}`, c]));
  const contents = slots.map((s) => {
    const row = bySlot.get(`${s.envId}\0${s.idLower}`);
    const meta: ContentMeta | null = row === undefined ? null : contentMeta(row, revs.get(row.content_pk) ?? []);
    return { envId: s.envId, idLower: s.idLower, meta };
  });
  return { fromSeq, toSeq, environments, keys, contents };
}

export async function pruneChanges(tx: Tx, keep: number): Promise<number> {
  const head = await headSeq(tx);
  if (head <= keep) return 0;
  const result = await tx.unsafe('DELETE FROM change_log WHERE seq <= $1', [head - keep], { prepare: true });
  return result.count;
}

export async function registerNode(sql: Sql, n: NodeRecord): Promise<void> {
  await sql.unsafe(
    `INSERT INTO nodes (node_id, pid, host, started_at, heartbeat_ms, applied_seq) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (node_id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at,
       heartbeat_ms = excluded.heartbeat_ms, applied_seq = excluded.applied_seq`,
    [n.nodeId, n.pid, n.host, n.startedAt, n.heartbeatMs, n.appliedSeq],
    { prepare: true },
  );
}

export async function heartbeat(sql: Sql, nodeId: string, appliedSeq: number, atMs: number): Promise<void> {
  await sql.unsafe('UPDATE nodes SET heartbeat_ms = $1, applied_seq = $2 WHERE node_id = $3', [atMs, appliedSeq, nodeId], { prepare: true });
}

export async function listNodes(sql: Sql): Promise<NodeRecord[]> {
  const rows = await sql.unsafe<{ node_id: string; pid: number; host: string; started_at: string; heartbeat_ms: number; applied_seq: number }[]>(
    'SELECT node_id, pid, host, started_at, heartbeat_ms, applied_seq FROM nodes ORDER BY node_id COLLATE "C"',
    [],
    { prepare: true },
  );
  return rows.map((r) => ({ nodeId: r.node_id, pid: r.pid, host: r.host, startedAt: r.started_at, heartbeatMs: r.heartbeat_ms, appliedSeq: r.applied_seq }));
}

export async function removeNode(sql: Sql, nodeId: string): Promise<void> {
  await sql.unsafe('DELETE FROM nodes WHERE node_id = $1', [nodeId], { prepare: true });
}

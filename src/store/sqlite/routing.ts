/**
 * Routing data in the SQLite store: the whole snapshot (start-up, and a reader that fell behind the
 * change log), the change log after a sequence number, the current state of what a run of log
 * entries touched (a delta), and the registry of nodes serving the store with the change each has
 * applied. Statements are prepared once per connection.
 *
 * Each function runs inside the caller's read transaction, so what it returns is one consistent
 * state of the store.
 */
import {
  CONTENT_COLUMNS,
  REVISION_COLUMNS,
  contentMeta,
  contentMetaOfTuple,
  revisionMeta,
  revisionMetaOfTuple,
  type ContentMetaRow,
  type ContentMetaTuple,
  type RevisionMetaRow,
  type RevisionMetaTuple,
} from '../rows.js';
import type { Database, Statement } from './driver.js';
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

export class RoutingQueries {
  private readonly environments: Statement<{ env_id: string }>;
  private readonly keys: Statement<{ digest: string; key_id: string; env_id: string }>;
  /** The snapshot's two big reads, raw (arrays): see Statement.raw. */
  private readonly revisions: Statement<RevisionMetaTuple>;
  private readonly contents: Statement<ContentMetaTuple>;
  private readonly headSeq: Statement<{ seq: number }>;
  private readonly oldestSeq: Statement<{ seq: number | null }>;
  private readonly changes: Statement<{ seq: number; kind: string; env_id: string; target: string }>;
  private readonly prune: Statement<never>;
  private readonly environment: Statement<{ env_id: string }>;
  private readonly key: Statement<{ digest: string; key_id: string; env_id: string; revoked_at: string | null }>;
  private readonly content: Statement<ContentMetaRow>;
  private readonly contentRevisions: Statement<RevisionMetaRow>;
  private readonly upsertNode: Statement<never>;
  private readonly beat: Statement<never>;
  private readonly nodes: Statement<{ node_id: string; pid: number; host: string; started_at: string; heartbeat_ms: number; applied_seq: number }>;
  private readonly deleteNode: Statement<never>;
  private readonly dataVersionStmt: Statement<{ data_version: number }>;

  constructor(db: Database) {
    this.environments = db.prepare('SELECT env_id FROM environments ORDER BY env_id');
    this.keys = db.prepare('SELECT digest, key_id, env_id FROM api_keys WHERE revoked_at IS NULL ORDER BY key_id');
    this.revisions = db.prepare(`SELECT ${REVISION_COLUMNS} ORDER BY content_pk, number`).raw<RevisionMetaTuple>(true);
    this.contents = db.prepare(`SELECT ${CONTENT_COLUMNS} ORDER BY c.env_id, c.id_lower`).raw<ContentMetaTuple>(true);
    // sqlite_sequence keeps the highest seq ever handed out, even once the log is pruned to nothing.
    this.headSeq = db.prepare("SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'change_log'), 0) AS seq");
    this.oldestSeq = db.prepare('SELECT min(seq) AS seq FROM change_log');
    this.changes = db.prepare('SELECT seq, kind, env_id, target FROM change_log WHERE seq > ? ORDER BY seq LIMIT ?');
    this.prune = db.prepare('DELETE FROM change_log WHERE seq <= ?');
    this.environment = db.prepare('SELECT env_id FROM environments WHERE env_id = ?');
    this.key = db.prepare('SELECT digest, key_id, env_id, revoked_at FROM api_keys WHERE key_id = ?');
    this.content = db.prepare(`SELECT ${CONTENT_COLUMNS} WHERE c.env_id = ? AND c.id_lower = ?`);
    this.contentRevisions = db.prepare(`SELECT ${REVISION_COLUMNS} WHERE content_pk = ? ORDER BY number`);
    this.upsertNode = db.prepare(
      `INSERT INTO nodes (node_id, pid, host, started_at, heartbeat_ms, applied_seq) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (node_id) DO UPDATE SET pid = excluded.pid, host = excluded.host, started_at = excluded.started_at,
         heartbeat_ms = excluded.heartbeat_ms, applied_seq = excluded.applied_seq`,
    );
    this.beat = db.prepare('UPDATE nodes SET heartbeat_ms = ?, applied_seq = ? WHERE node_id = ?');
    this.nodes = db.prepare('SELECT node_id, pid, host, started_at, heartbeat_ms, applied_seq FROM nodes ORDER BY node_id');
    this.deleteNode = db.prepare('DELETE FROM nodes WHERE node_id = ?');
    // A statement, not db.pragma(), which compiles per call: the control thread polls it (store.ts watchCommits).
    this.dataVersionStmt = db.prepare('PRAGMA data_version');
  }

  snapshot(): DirectorySnapshot {
    const seq = this.headSeq.get()?.seq ?? 0;
    const environments = this.environments.all().map((r) => r.env_id);
    const keys: KeyDigest[] = this.keys.all().map((r) => ({ digest: r.digest, keyId: r.key_id, envId: r.env_id }));
    const revs = new Map<number, RevisionMeta[]>();
    for (const r of this.revisions.iterate()) {
      let list = revs.get(r[0]);
      if (list === undefined) {
        list = [];
        revs.set(r[0], list);
      }
      list.push(revisionMetaOfTuple(r));
    }
    const contents: ContentMeta[] = [];
    for (const c of this.contents.iterate()) contents.push(contentMetaOfTuple(c, revs.get(c[0]) ?? []));
    return { seq, environments, keys, contents };
  }

  changesSince(afterSeq: number, limit: number): ChangeBatch {
    const headSeq = this.headSeq.get()?.seq ?? 0;
    if (afterSeq >= headSeq) return { entries: [], headSeq, complete: true };
    const oldest = this.oldestSeq.get()?.seq ?? null;
    // Entries are numbered without gaps, so the log still holds everything after afterSeq exactly
    // when its oldest entry is no later than afterSeq + 1.
    if (oldest === null || oldest > afterSeq + 1) return { entries: [], headSeq, complete: false };
    const entries: ChangeEntry[] = this.changes
      .all(afterSeq, limit)
      .map((r) => ({ seq: r.seq, kind: r.kind as ChangeKind, envId: r.env_id, target: r.target }));
    return { entries, headSeq, complete: true };
  }

  /** The current state of every object the entries touched, each once (entries may repeat one). */
  delta(entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): RoutingDelta {
    const environments: { envId: string; exists: boolean }[] = [];
    const keys: { keyId: string; envId: string; key: KeyDigest | null }[] = [];
    const contents: { envId: string; idLower: string; meta: ContentMeta | null }[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      const slot = `${e.kind}\0${e.envId}\0${e.target}`;
      if (seen.has(slot)) continue;
      seen.add(slot);
      if (e.kind === 'environment') {
        environments.push({ envId: e.envId, exists: this.environment.get(e.envId) !== undefined });
      } else if (e.kind === 'key') {
        const row = this.key.get(e.target);
        const live = row !== undefined && row.revoked_at === null && row.env_id === e.envId;
        keys.push({ keyId: e.target, envId: e.envId, key: live ? { digest: row.digest, keyId: row.key_id, envId: row.env_id } : null });
      } else {
        const row = this.content.get(e.envId, e.target);
        const meta = row === undefined ? null : contentMeta(row, this.contentRevisions.all(row.content_pk).map(revisionMeta));
        contents.push({ envId: e.envId, idLower: e.target, meta });
      }
    }
    return { fromSeq, toSeq, environments, keys, contents };
  }

  registerNode(n: NodeRecord): void {
    this.upsertNode.run(n.nodeId, n.pid, n.host, n.startedAt, n.heartbeatMs, n.appliedSeq);
  }

  heartbeat(nodeId: string, appliedSeq: number, atMs: number): void {
    this.beat.run(atMs, appliedSeq, nodeId);
  }

  listNodes(): NodeRecord[] {
    return this.nodes.all().map((r) => ({
      nodeId: r.node_id,
      pid: r.pid,
      host: r.host,
      startedAt: r.started_at,
      heartbeatMs: r.heartbeat_ms,
      appliedSeq: r.applied_seq,
    }));
  }

  removeNode(nodeId: string): void {
    this.deleteNode.run(nodeId);
  }

  /** Changes whenever another connection commits (SQLite's data_version of this connection). */
  dataVersion(): number {
    return this.dataVersionStmt.get()?.data_version ?? 0;
  }

  /** Drops all but the newest `keep` entries; returns how many went. */
  pruneChanges(keep: number): number {
    const headSeq = this.headSeq.get()?.seq ?? 0;
    if (headSeq <= keep) return 0;
    return this.prune.run(headSeq - keep).changes;
  }
}

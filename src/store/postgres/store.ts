/**
 * The Store on PostgreSQL: one database shared by every node of a fleet (docs/fleet.md).
 *
 * Writes run in one transaction that first takes the store's write lock (an advisory lock, waited
 * for at most --store-busy-timeout, then 503 store_busy): validation reads and the writes that
 * follow see one state, as under SQLite's single writer, and the change log is appended by
 * triggers in the same transaction (schema.ts). Reads of several statements run in one
 * repeatable-read transaction, so they see one committed state.
 *
 * Outage: a call that finds the database unreachable marks the store unavailable (the control
 * thread reports it to /healthz and writes answer 503 store_unavailable at once instead of waiting
 * for a connection) and starts a probe that retries with backoff; once the database answers, the
 * store is available again and every commit watcher is woken, so each node reads the change log
 * from the sequence it applied and catches up.
 */
import { RcdError } from '../../runtime/errors.js';
import { finishImport, overlap, prepareImport, preparedKeyDigests, exportEntry, setOwn, EXPORT_NOTE, type Bundle, type BundleEntry, type PlannedEnvironment, type PreparedImport } from '../bundle/bundle.js';
import {
  apiKeyDigest,
  contentIdKey,
  envIdProblem,
  generateKey,
  generateKeyId,
  plainKeyProblem,
} from '../ids.js';
import { nextNumber, nowIso } from '../sqlite/sql.js';
import { runRowsAsync, type Step } from '../ops/rows.js';
import * as content from '../ops/content.js';
import { cancelOfEnvironment } from '../schedule/lifecycle.js';
import { exportSchedules, importSchedules, STORE_IMPORT, withSchedules, type ImportScheduler } from '../schedule/bundle.js';
import type { ScheduleRow } from '../schedule/rows.js';
import { checkContentWrite, checkRevisionNumber, checkSyncIds } from '../write-checks.js';
import { settle } from '../../shared/settle.js';
import type {
  ChangeBatch,
  ChangeEntry,
  CommitWatch,
  ContentDetail,
  ContentSummary,
  DirectorySnapshot,
  EnvironmentInfo,
  ContentImportReport,
  ImportReport,
  KeyDigest,
  KeyInfo,
  ContentRef,
  MappingResult,
  NodeRecord,
  OutboxEntry,
  OutboxOf,
  OutboxOutcome,
  PutContentResult,
  RoutingDelta,
  Store,
  SyncReport,
} from '../types.js';
import { DEFAULT_PG_CONNECT_TIMEOUT_MS, OnLost, connect, describePgError, isUnreachable, pgFailure, runOnPool, type Sql, type Tx } from './connection.js';
import { contentDetail } from '../rows.js';
import { PgRows } from './rows.js';
import * as routing from './routing.js';
import * as outboxRows from './outbox.js';
import { CHANGE_CHANNEL, WRITE_LOCK } from './schema.js';
import { guardedView, WRITE_GUARD, type WriteGuard } from '../write-guard.js';
import { requireLiveTokenPg } from './token-guard.js';

/** Connections of long reads (snapshotStep), besides the pool; more wait for one. */
const SNAPSHOT_CONNECTIONS = 2;
/** Between two notifications, a node reads the change log anyway: a lost notification heals by then. */
export const CATCH_UP_MS = 1000;
/** Reconnection probe backoff: first retry, and the cap it doubles up to. */
const PROBE_FIRST_MS = 100;
const PROBE_MAX_MS = 1000;

export class PostgresStore implements Store {
  readonly readerUrl: string;
  private readonly sql: Sql;
  private readonly busyTimeoutMs: number;
  private readonly poolSize: number;
  private closed = false;
  private unreachable: string | null = null;
  private probe: NodeJS.Timeout | null = null;
  private probeDelayMs = PROBE_FIRST_MS;
  private readonly wakers = new Set<() => void>();
  /** Null here; a guarded view's (guarded()) admin token, checked by every write of the view. */
  readonly [WRITE_GUARD]: WriteGuard | null = null;
  private snapshots: Sql | null = null;

  constructor(sql: Sql, readerUrl: string, busyTimeoutMs: number, poolSize: number) {
    this.sql = sql;
    this.poolSize = poolSize;
    this.readerUrl = readerUrl;
    this.busyTimeoutMs = busyTimeoutMs;
  }

  unavailableReason(): string | null {
    return this.unreachable;
  }

  /**
   * Runs a call against the database (connection.ts runOnPool: again on a connection a restart
   * ended; a read once more on a lost connection, a write not), sorting its failure and tracking
   * reachability.
   */
  private async call<T>(fn: () => Promise<T>, onLost = OnLost.RetryOnce): Promise<T> {
    if (this.closed) throw new RcdError('internal', 'the store is closed');
    if (this.unreachable !== null) throw new RcdError('store_unavailable', `the store is unreachable (${this.unreachable}); retrying in the background`);
    try {
      return await runOnPool(fn, this.poolSize, onLost);
    } catch (err) {
      if (isUnreachable(err)) this.markUnreachable(describePgError(err));
      throw pgFailure(err);
    }
  }

  /** One transaction under the write lock: `fn`, then the outbox entries it reports (types.ts, OutboxOf). */
  private write<T>(fn: (rows: PgRows) => Promise<T>, outbox?: OutboxOf<T>): Promise<T> {
    const guard = this[WRITE_GUARD];
    return this.call(
      () =>
        this.sql.begin(async (tx) => {
          await tx.unsafe(`SET LOCAL lock_timeout = ${this.busyTimeoutMs}`);
          await tx.unsafe('SELECT pg_advisory_xact_lock($1)', [WRITE_LOCK], { prepare: true });
          if (guard !== null) await requireLiveTokenPg(tx, guard);
          const result = await fn(new PgRows(tx));
          if (outbox !== undefined) {
            const after = outbox.contents === undefined ? [] : (await routing.delta(tx, outbox.contents, 0, 0)).contents;
            const now = Date.now();
            await outboxRows.insertOutbox(tx, outbox.build(result, after), now, now + outbox.holdMs);
          }
          return result;
        }) as Promise<T>,
      OnLost.Throw,
    );
  }

  writeStep<T>(step: () => Step<T>, outbox?: OutboxOf<T>): Promise<T> {
    return this.write((rows) => runRowsAsync(rows, step()), outbox);
  }

  writeStepOnEach(step: () => Step<void>): Promise<void> {
    // poolSize transactions at once: the driver gives each a connection of its own while the pool
    // has room (a reader holding one leaves one of them to queue for another, already warm).
    return Promise.all(Array.from({ length: this.poolSize }, () => this.writeStep(step))).then(() => undefined);
  }

  leaseStep<T>(step: () => Step<T>): Promise<T> {
    return this.call(() => this.sql.begin((tx) => runRowsAsync(new PgRows(tx), step())) as Promise<T>, OnLost.Throw);
  }

  readStep<T>(step: () => Step<T>): Promise<T> {
    return this.read((tx) => runRowsAsync(new PgRows(tx), step()));
  }

  guarded(guard: WriteGuard): Store {
    return guardedView(this, guard);
  }

  /**
   * A repeatable-read read-only transaction takes no lock a writer waits for, and each row call is a
   * turn of the event loop. It runs on connections of its own (SNAPSHOT_CONNECTIONS, opened on first
   * use): a preview holding one for its replay leaves the pool to the writes and the applier, whose
   * warm-up takes every connection of the pool at once.
   */
  snapshotStep<T>(step: () => Step<T>): Promise<T> {
    const sql = (this.snapshots ??= connect(this.readerUrl, { poolSize: SNAPSHOT_CONNECTIONS, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS }));
    return this.call(() => sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', (tx) => runRowsAsync(new PgRows(tx), step())) as Promise<T>);
  }

  private read<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.call(() => this.sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', fn) as Promise<T>);
  }

  private markUnreachable(reason: string): void {
    if (this.closed) return;
    if (this.unreachable === null) this.unreachable = reason;
    if (this.probe === null) this.scheduleProbe();
  }

  private scheduleProbe(): void {
    this.probe = setTimeout(() => void this.runProbe(), this.probeDelayMs);
    this.probe.unref();
  }

  private async runProbe(): Promise<void> {
    if (this.closed) return;
    try {
      // Each pooled connection that was idle across a restart hands its shutdown error (57P01) to
      // its next query, this probe included: those say nothing about the database now, so the
      // probe tries the next connection at once instead of backing off once per dead connection.
      await runOnPool(() => this.sql.unsafe('SELECT 1'), this.poolSize, OnLost.Throw);
    } catch (err) {
      this.unreachable = describePgError(err);
      this.probeDelayMs = Math.min(this.probeDelayMs * 2, PROBE_MAX_MS);
      this.scheduleProbe();
      return;
    }
    this.probe = null;
    this.probeDelayMs = PROBE_FIRST_MS;
    this.unreachable = null;
    for (const wake of this.wakers) wake();
  }

  private async requireEnv(rows: PgRows, envId: string): Promise<void> {
    if ((await rows.getEnv(envId)) === undefined) throw new RcdError('not_found', `environment ${JSON.stringify(envId)} does not exist`);
  }

  loadDirectory(): Promise<DirectorySnapshot> {
    return this.read((tx) => routing.snapshot(tx));
  }

  changesSince(afterSeq: number, limit: number): Promise<ChangeBatch> {
    return this.call(() => routing.changesSince(this.sql, afterSeq, limit));
  }

  loadDelta(entries: readonly ChangeEntry[], fromSeq: number, toSeq: number): Promise<RoutingDelta> {
    if (!routing.deltaNeedsTransaction(entries)) return this.call(() => routing.delta(this.sql, entries, fromSeq, toSeq));
    return this.read((tx) => routing.delta(tx, entries, fromSeq, toSeq));
  }

  pruneChanges(keep: number): Promise<number> {
    // Under the write lock: no writer numbers entries while the head is read and the tail cut.
    return this.write((rows) => routing.pruneChanges(rows.tx, keep));
  }

  async readMappings(mappingIds: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (mappingIds.length === 0) return out;
    const rows = await this.call(() =>
      this.sql.unsafe<{ mapping_id: number; json: string }[]>('SELECT mapping_id, json FROM mappings WHERE mapping_id = ANY($1::bigint[])', [
        mappingIds as number[],
      ]),
    );
    for (const r of rows) out.set(r.mapping_id, r.json);
    return out;
  }

  registerNode(node: NodeRecord): Promise<void> {
    return this.call(() => routing.registerNode(this.sql, node));
  }

  heartbeat(nodeId: string, appliedSeq: number, atMs: number): Promise<void> {
    return this.call(() => routing.heartbeat(this.sql, nodeId, appliedSeq, atMs));
  }

  listNodes(): Promise<NodeRecord[]> {
    return this.call(() => routing.listNodes(this.sql));
  }

  removeNode(nodeId: string): Promise<void> {
    return this.call(() => routing.removeNode(this.sql, nodeId));
  }

  /**
   * LISTEN on the change channel (a connection of its own that postgres.js re-opens with backoff
   * after a loss; each (re)connection wakes the caller too, since notifications sent meanwhile are
   * lost), plus a wake every CATCH_UP_MS and one when the store becomes reachable again.
   */
  async watchCommits(wake: () => void, onError: (err: unknown) => void): Promise<CommitWatch> {
    this.wakers.add(wake);
    const timer = setInterval(wake, CATCH_UP_MS);
    timer.unref();
    let listening: { unlisten(): Promise<void> } | null = null;
    try {
      listening = await this.sql.listen(CHANGE_CHANNEL, () => wake(), () => wake());
    } catch (err) {
      // The catch-up timer and the probe still bring changes in; the listener is retried by the driver.
      onError(err);
    }
    return {
      stop: () => {
        clearInterval(timer);
        this.wakers.delete(wake);
        listening?.unlisten().catch(() => undefined);
      },
    };
  }

  listEnvironments(): Promise<EnvironmentInfo[]> {
    return this.read(async (tx) => {
      const rows = await tx.unsafe<{ env_id: string; created_at: string; content_count: number; key_count: number }[]>(
        `SELECT e.env_id, e.created_at,
                (SELECT count(*) FROM contents c WHERE c.env_id = e.env_id)::int AS content_count,
                (SELECT count(*) FROM api_keys k WHERE k.env_id = e.env_id AND k.revoked_at IS NULL)::int AS key_count
           FROM environments e ORDER BY e.env_id COLLATE "C"`,
      );
      return rows.map((r) => ({ id: r.env_id, createdAt: r.created_at, contentCount: r.content_count, keyCount: r.key_count }));
    });
  }

  listKeys(envId: string): Promise<KeyInfo[]> {
    return this.read(async (tx) => {
      await this.requireEnv(new PgRows(tx), envId);
      const rows = await tx.unsafe<{ key_id: string; env_id: string; created_at: string; last_used_at: string | null; revoked_at: string | null }[]>(
        'SELECT key_id, env_id, created_at, last_used_at, revoked_at FROM api_keys WHERE env_id = $1 ORDER BY created_at COLLATE "C", key_id COLLATE "C"',
        [envId],
      );
      return rows.map((r) => ({ id: r.key_id, envId: r.env_id, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at }));
    });
  }

  listContent(envId: string): Promise<ContentSummary[]> {
    return this.read(async (tx) => {
      await this.requireEnv(new PgRows(tx), envId);
      const rows = await tx.unsafe<{ id: string; hash: string; revision_count: number; mapping_id: number | null; updated_at: string }[]>(
        `SELECT c.id, r.hash, c.mapping_id, c.updated_at,
                (SELECT count(*) FROM revisions x WHERE x.content_pk = c.content_pk)::int AS revision_count
           FROM contents c
           JOIN revisions r ON r.content_pk = c.content_pk
                           AND r.number = (SELECT max(number) FROM revisions y WHERE y.content_pk = c.content_pk)
          WHERE c.env_id = $1
          ORDER BY c.id_lower COLLATE "C"`,
        [envId],
      );
      return rows.map((r) => ({ id: r.id, hash: r.hash, revisionCount: r.revision_count, hasMapping: r.mapping_id !== null, updatedAt: r.updated_at }));
    });
  }

  getContent(envId: string, id: string): Promise<ContentDetail | undefined> {
    if (typeof id !== 'string') return Promise.resolve(undefined);
    return this.read(async (tx) => {
      const rows = new PgRows(tx);
      const content = await rows.findContent(envId, contentIdKey(id));
      if (content === undefined) return undefined;
      return contentDetail(content, await rows.revisions(content.content_pk), (await rows.getMapping(content.mapping_id))?.json);
    });
  }

  async putEnvironment(envId: string): Promise<boolean> {
    const problem = envIdProblem(envId);
    if (problem !== '') throw new RcdError('invalid_request', problem);
    return this.write(async (rows) => {
      if ((await rows.getEnv(envId)) !== undefined) return false;
      await rows.insertEnv(envId, nowIso());
      return true;
    });
  }

  deleteEnvironment(envId: string, force: boolean, outbox?: OutboxOf<readonly ScheduleRow[]>): Promise<readonly ScheduleRow[]> {
    return this.write(async (rows) => {
      await this.requireEnv(rows, envId);
      const n = (await rows.tx.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM contents WHERE env_id = $1', [envId]))[0]?.n ?? 0;
      if (n > 0 && !force) {
        throw new RcdError('conflict', `environment ${JSON.stringify(envId)} holds ${n} content item(s); delete them first or force`);
      }
      await rows.tx.unsafe('DELETE FROM environments WHERE env_id = $1', [envId]);
      return runRowsAsync(rows, cancelOfEnvironment(envId));
    }, outbox);
  }

  async createKey(envId: string, plainKey?: string): Promise<{ id: string; key: string }> {
    if (plainKey !== undefined) {
      const problem = plainKeyProblem(plainKey);
      if (problem !== '') throw new RcdError('invalid_request', problem);
    }
    const key = plainKey ?? generateKey();
    return this.write(async (rows) => {
      await this.requireEnv(rows, envId);
      const digest = apiKeyDigest(key);
      const existing = await rows.keyByDigest(digest);
      if (existing !== undefined) {
        throw new RcdError(
          'conflict',
          existing.env_id === envId ? 'this API key already exists in this environment' : 'this API key already belongs to another environment',
        );
      }
      const id = generateKeyId();
      await rows.insertKey(id, envId, digest, nowIso());
      return { id, key };
    });
  }

  revokeKey(envId: string, keyId: string): Promise<void> {
    return this.write(async (rows) => {
      await this.requireEnv(rows, envId);
      const found = await rows.tx.unsafe<{ revoked_at: string | null }[]>('SELECT revoked_at FROM api_keys WHERE env_id = $1 AND key_id = $2', [envId, keyId]);
      const row = found[0];
      if (row === undefined) throw new RcdError('not_found', `key ${JSON.stringify(keyId)} does not exist in environment ${JSON.stringify(envId)}`);
      if (row.revoked_at === null) await rows.tx.unsafe('UPDATE api_keys SET revoked_at = $1 WHERE key_id = $2', [nowIso(), keyId]);
    });
  }

  async recordKeyUse(keyIds: readonly string[], at: string): Promise<void> {
    if (keyIds.length === 0) return;
    // Not routing data: no write lock, one statement.
    await this.call(() =>
      this.sql.unsafe('UPDATE api_keys SET last_used_at = $1 WHERE key_id = ANY($2::text[]) AND (last_used_at IS NULL OR last_used_at < $1)', [
        at,
        keyIds as string[],
      ]),
    );
  }

  async putContent(envId: string, id: string, text: string, minAppVersion: string | null, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult> {
    const compiled = checkContentWrite(id, text, minAppVersion);
    return this.writeStep(() => content.putContent(envId, id, text, compiled, minAppVersion), outbox);
  }

  deleteContent(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef> {
    return this.writeStep(() => content.deleteContent(envId, id), outbox);
  }

  async rollback(envId: string, id: string, to: number, outbox?: OutboxOf<PutContentResult>): Promise<PutContentResult> {
    checkRevisionNumber(to);
    return this.writeStep(() => content.rollback(envId, id, to), outbox);
  }

  putMapping(envId: string, id: string, mapping: unknown, outbox?: OutboxOf<MappingResult>): Promise<MappingResult> {
    return this.writeStep(() => content.putMapping(envId, id, mapping), outbox);
  }

  deleteMapping(envId: string, id: string, outbox?: OutboxOf<ContentRef>): Promise<ContentRef> {
    return this.writeStep(() => content.deleteMapping(envId, id), outbox);
  }

  async sync(from: string, to: string, ids?: readonly string[], outbox?: OutboxOf<SyncReport>): Promise<SyncReport> {
    checkSyncIds(ids);
    return this.writeStep(() => content.sync(from, to, ids), outbox);
  }

  importBundle(bundle: unknown, outbox?: OutboxOf<ImportReport>, by: ImportScheduler = STORE_IMPORT): Promise<ImportReport> {
    return settle(() => prepareImport(bundle)).then((prepared) => this.importPrepared(prepared, outbox, by));
  }

  importPrepared(prepared: PreparedImport, outbox?: OutboxOf<ImportReport>, by: ImportScheduler = STORE_IMPORT): Promise<ImportReport> {
    return this.write(async (rows) => {
      const owners = await rows.keyOwners(preparedKeyDigests(prepared));
      const content = await applyPlan(rows, finishImport(prepared, (digest) => owners.get(digest)));
      return { ...content, ...(await runRowsAsync(rows, importSchedules(prepared.schedules, by))) };
    }, outbox);
  }

  /**
   * `rcd migrate`: a bundle (every revision and mapping) and the API keys as digests (plain keys
   * are never stored, so a bundle cannot carry them), in one transaction, into an empty store.
   */
  importWithKeyDigests(bundle: unknown, keys: readonly KeyDigest[]): Promise<ImportReport> {
    return this.write(async (rows) => {
      const n = (await rows.tx.unsafe<{ n: number }[]>('SELECT count(*)::int AS n FROM environments'))[0]?.n ?? 0;
      if (n > 0) throw new RcdError('conflict', `the target store already holds ${n} environment(s): rcd migrate copies into an empty store only`);
      const prepared = prepareImport(bundle);
      const report = await applyPlan(rows, finishImport(prepared, () => undefined));
      const at = nowIso();
      for (const k of keys) await rows.insertKey(k.keyId, k.envId, k.digest, at);
      return { ...report, keysAdded: keys.length, ...(await runRowsAsync(rows, importSchedules(prepared.schedules, STORE_IMPORT))) };
    });
  }

  exportBundle(): Promise<unknown> {
    return this.read(async (tx) => {
      const rows = new PgRows(tx);
      const environments: Bundle['environments'] = {};
      for (const { env_id: envId } of await tx.unsafe<{ env_id: string }[]>('SELECT env_id FROM environments ORDER BY env_id COLLATE "C"')) {
        const content: Record<string, BundleEntry> = {};
        for (const c of await rows.contentsOf(envId)) {
          setOwn(content, c.id, exportEntry(await rows.revisions(c.content_pk), (await rows.getMapping(c.mapping_id))?.json));
        }
        setOwn(environments, envId, { keys: [], content });
      }
      return withSchedules({ note: EXPORT_NOTE, environments }, await runRowsAsync(rows, exportSchedules()));
    });
  }

  claimOutbox(nowMs: number, leaseUntilMs: number, limit: number): Promise<OutboxEntry[]> {
    return this.call(() => outboxRows.claimOutbox(this.sql, nowMs, leaseUntilMs, limit), OnLost.Throw);
  }

  settleOutbox(id: string, outcome: OutboxOutcome): Promise<void> {
    return this.call(() => outboxRows.settleOutbox(this.sql, id, outcome, Date.now()), OnLost.Throw);
  }

  releaseOutbox(ids: readonly string[], atMs: number): Promise<void> {
    return this.call(() => outboxRows.releaseOutbox(this.sql, ids, atMs), OnLost.Throw);
  }

  listDeadLetters(limit: number): Promise<OutboxEntry[]> {
    return this.call(() => outboxRows.listDeadLetters(this.sql, limit));
  }

  outboxCounts(): Promise<{ pending: number; dead: number }> {
    return this.call(() => outboxRows.outboxCounts(this.sql));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.probe !== null) clearTimeout(this.probe);
    this.probe = null;
    this.wakers.clear();
    await this.snapshots?.end({ timeout: 1 });
    await this.sql.end({ timeout: 1 });
  }
}

/** Writes a checked bundle plan: the same steps as the SQLite store's (bundle.ts applyPlan). */
async function applyPlan(rows: PgRows, plan: readonly PlannedEnvironment[]): Promise<ContentImportReport> {
  let environmentsCreated = 0;
  let keysAdded = 0;
  let revisionsAdded = 0;
  let mappingsChanged = 0;
  const at = nowIso();
  for (const env of plan) {
    if ((await rows.getEnv(env.envId)) === undefined) {
      await rows.insertEnv(env.envId, at);
      environmentsCreated++;
    }
    for (const digest of env.keyDigests) {
      if ((await rows.keyByDigest(digest)) !== undefined) continue;
      await rows.insertKey(generateKeyId(), env.envId, digest, at);
      keysAdded++;
    }
    for (const c of env.contents) {
      const existing = await rows.findContent(env.envId, c.idLower);
      const row = existing ?? (await rows.insertContent(env.envId, c.idLower, c.id, at));
      // As bundle.ts applyPlan: a row created here has no revisions to compare and is already in the change log.
      const stored = existing === undefined ? [] : await rows.newestRevisions(row.content_pk, c.revisions.length);
      const skip = overlap(stored, c.revisions);
      let number = nextNumber(stored.length > 0 ? stored[stored.length - 1] : undefined);
      for (let i = skip; i < c.revisions.length; i++) {
        const r = c.revisions[i]!;
        if (existing === undefined) await rows.insertRevision(row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
        else await rows.appendRevision(row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
        number++;
        revisionsAdded++;
      }
      if (!c.setsMapping) continue;
      const current = await rows.getMapping(row.mapping_id);
      if (c.mappingJson === null) {
        if (current !== undefined) {
          await rows.clearMapping(row.content_pk, at);
          mappingsChanged++;
        }
      } else if (current === undefined || current.json !== c.mappingJson) {
        await rows.insertMapping(row.content_pk, c.mappingJson, c.ruleCount, at);
        mappingsChanged++;
      }
    }
  }
  return { environmentsCreated, keysAdded, revisionsAdded, mappingsChanged };
}

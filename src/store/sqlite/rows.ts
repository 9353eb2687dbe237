/**
 * The SQLite store's rows for the steps of src/store/ops/: StoreSql's statements plus the ones of
 * scheduled changes, rollouts, leases and savepoints. Synchronous; run inside the store's
 * transaction (SqliteStore.write).
 */
import type { Database, Statement } from './driver.js';
import { StoreSql, type ContentRow, type RevisionRow } from './sql.js';
import type { AppliedRow, ContentHead, NewRevision, Rows, ScheduleItem, ScheduleOutcomeRow } from '../ops/rows.js';
import type { LeaseHolder, RolloutRow, ScheduleQuery, ScheduleRow, ScheduleStatus } from '../schedule/rows.js';

const SCHEDULE_COLUMNS =
  's.schedule_id, s.env_id, s.due_ms, s.ops, s.note, s.status, s.rollout_id, s.step, s.created_at, s.created_by, s.token_id, s.settled_at, s.late_ms, s.error_code, s.error_message, s.result';
const ROLLOUT_COLUMNS = 'rollout_id, env_id, id_lower, content_id, rule, segment, variant, start, before, steps, status, note, created_at, created_by, token_id';
const NAME = /^[a-z_]+$/;

export class SqliteRows extends StoreSql implements Rows {
  private readonly contentsOfStmt: Statement<ContentRow>;
  private readonly deleteContentStmt: Statement<never>;
  private readonly revisionStmt: Statement<RevisionRow>;
  private readonly insertScheduleStmt: Statement<never>;
  private readonly insertItemStmt: Statement<never>;
  private readonly getScheduleStmt: Statement<ScheduleRow>;
  private readonly dueStmt: Statement<ScheduleRow>;
  private readonly touchingStmt: Statement<ScheduleRow>;
  private readonly openTouchingStmt: Statement<ScheduleRow>;
  private readonly openOfEnvStmt: Statement<ScheduleRow>;
  private readonly openOfTokenStmt: Statement<ScheduleRow>;
  private readonly settleStmt: Statement<never>;
  private readonly moveStmt: Statement<never>;
  private readonly editStmt: Statement<never>;
  private readonly clearItemsStmt: Statement<never>;
  private readonly statusStmt: Statement<never>;
  private readonly countOpenStmt: Statement<{ n: number }>;
  private readonly nextDueStmt: Statement<{ due: number | null }>;
  private readonly insertRolloutStmt: Statement<never>;
  private readonly getRolloutStmt: Statement<RolloutRow>;
  private readonly rolloutStatusStmt: Statement<never>;
  private readonly takeLeaseStmt: Statement<never>;
  private readonly leaseStmt: Statement<{ holder: string; until_ms: number }>;
  private readonly releaseLeaseStmt: Statement<never>;

  constructor(db: Database) {
    super(db);
    this.contentsOfStmt = db.prepare('SELECT content_pk, env_id, id_lower, id, mapping_id, created_at, updated_at FROM contents WHERE env_id = ? ORDER BY id_lower');
    this.deleteContentStmt = db.prepare('DELETE FROM contents WHERE content_pk = ?');
    this.revisionStmt = db.prepare('SELECT rev_id, number, text, minified, hash, min_app_version, created_at FROM revisions WHERE content_pk = ? AND number = ?');
    this.insertScheduleStmt = db.prepare(
      `INSERT INTO schedules (schedule_id, env_id, due_ms, ops, note, status, rollout_id, step, created_at, created_by, token_id, settled_at, late_ms, error_code, error_message, result)
       VALUES (@schedule_id, @env_id, @due_ms, @ops, @note, @status, @rollout_id, @step, @created_at, @created_by, @token_id, @settled_at, @late_ms, @error_code, @error_message, @result)`,
    );
    this.insertItemStmt = db.prepare('INSERT OR IGNORE INTO schedule_items (schedule_id, env_id, id_lower) VALUES (?, ?, ?)');
    this.getScheduleStmt = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.schedule_id = ?`);
    this.dueStmt = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.status = 'pending' AND s.due_ms <= ? ORDER BY s.due_ms, s.schedule_id LIMIT ?`);
    // The items of the change being rehearsed come as a JSON array of keys; '' is every item.
    this.touchingStmt = db.prepare(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
        WHERE s.status = 'pending' AND (s.due_ms < @before OR (s.due_ms = @before AND s.schedule_id < @beforeId))
          AND EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = @env
                        AND (i.id_lower = '' OR i.id_lower IN (SELECT value FROM json_each(@keys)) OR EXISTS (SELECT 1 FROM json_each(@keys) WHERE value = '')))
        ORDER BY s.due_ms, s.schedule_id`,
    );
    // The item named, or every item of the environment written by a sync from another one.
    this.openTouchingStmt = db.prepare(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
        WHERE s.status IN ('pending', 'paused')
          AND EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = @env
                        AND (i.id_lower = @key OR (i.id_lower = '' AND s.env_id <> @env)))
        ORDER BY s.due_ms, s.schedule_id`,
    );
    this.openOfEnvStmt = db.prepare(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
        WHERE s.status IN ('pending', 'paused')
          AND (s.env_id = ? OR EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = ?))
        ORDER BY s.due_ms, s.schedule_id`,
    );
    this.openOfTokenStmt = db.prepare(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.token_id = ? AND s.status IN ('pending', 'paused') ORDER BY s.due_ms, s.schedule_id`);
    this.settleStmt = db.prepare(
      `UPDATE schedules SET status = @status, settled_at = @settledAt, late_ms = @lateMs, error_code = @errorCode, error_message = @errorMessage, result = @result
        WHERE schedule_id = @id AND status IN (SELECT value FROM json_each(@from))`,
    );
    this.moveStmt = db.prepare(`UPDATE schedules SET due_ms = ? WHERE schedule_id = ? AND status IN ('pending', 'paused')`);
    this.editStmt = db.prepare(`UPDATE schedules SET ops = ?, note = ? WHERE schedule_id = ? AND status IN ('pending', 'paused')`);
    this.clearItemsStmt = db.prepare('DELETE FROM schedule_items WHERE schedule_id = ?');
    this.statusStmt = db.prepare('UPDATE schedules SET status = ? WHERE schedule_id = ? AND status = ?');
    this.countOpenStmt = db.prepare(`SELECT count(*) AS n FROM schedules WHERE status IN ('pending', 'paused')`);
    this.nextDueStmt = db.prepare(`SELECT min(due_ms) AS due FROM schedules WHERE status = 'pending'`);
    this.insertRolloutStmt = db.prepare(
      `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES (@rollout_id, @env_id, @id_lower, @content_id, @rule, @segment, @variant, @start, @before, @steps, @status, @note, @created_at, @created_by, @token_id)`,
    );
    this.getRolloutStmt = db.prepare(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE rollout_id = ?`);
    this.rolloutStatusStmt = db.prepare('UPDATE rollouts SET status = ? WHERE rollout_id = ?');
    this.takeLeaseStmt = db.prepare(
      `INSERT INTO leases (name, holder, until_ms) VALUES (@name, @holder, @until)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
        WHERE leases.holder = excluded.holder OR leases.until_ms < @now`,
    );
    this.leaseStmt = db.prepare('SELECT holder, until_ms FROM leases WHERE name = ?');
    this.releaseLeaseStmt = db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?');
  }

  contentHeads(envId: string, keys: readonly string[]): ContentHead[] {
    return keys.map((key) => {
      const content = this.findContent(envId, key);
      return { content, newest: content === undefined ? undefined : this.newestRevision(content.content_pk) };
    });
  }

  insertContents(envId: string, items: readonly { readonly idLower: string; readonly id: string }[], at: string): ContentRow[] {
    return items.map((i) => this.insertContent(envId, i.idLower, i.id, at));
  }

  insertRevisions(revisions: readonly NewRevision[], at: string): void {
    for (const r of revisions) {
      if (r.touch) this.appendRevision(r.contentPk, r.number, r.text, r.compiled, r.minAppVersion, at);
      else this.insertRevision(r.contentPk, r.number, r.text, r.compiled, r.minAppVersion, at);
    }
  }

  contentsOf(envId: string): ContentRow[] {
    return this.contentsOfStmt.all(envId);
  }

  deleteContent(contentPk: number): void {
    this.deleteContentStmt.run(contentPk);
  }

  revision(contentPk: number, number: number): RevisionRow | undefined {
    return this.revisionStmt.get(contentPk, number);
  }

  /** The processes on one SQLite file share one machine, so its clock is the store's. */
  storeNowMs(): number {
    return Date.now();
  }

  insertSchedule(row: ScheduleRow, items: readonly ScheduleItem[]): void {
    this.insertScheduleStmt.run(row);
    for (const item of items) this.insertItemStmt.run(row.schedule_id, item.envId, item.idLower);
  }

  getSchedule(scheduleId: string): ScheduleRow | undefined {
    return this.getScheduleStmt.get(scheduleId);
  }

  listSchedules(q: ScheduleQuery): ScheduleRow[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.envIds !== null) {
      const envs = JSON.stringify(q.envIds);
      if (q.incoming) {
        where.push(`(s.env_id IN (SELECT value FROM json_each(?)) OR EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id IN (SELECT value FROM json_each(?))))`);
        params.push(envs, envs);
      } else {
        where.push(`s.env_id IN (SELECT value FROM json_each(?))`);
        params.push(envs);
      }
    }
    if (q.idLower !== null) {
      // The item of the listed environment: a sync into it names the item there.
      const itemEnv = q.incoming && q.envIds !== null ? q.envIds[0] ?? null : null;
      where.push(`EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = coalesce(?, s.env_id) AND (i.id_lower = ? OR i.id_lower = ''))`);
      params.push(itemEnv, q.idLower);
    }
    if (q.statuses !== null) {
      where.push(`s.status IN (SELECT value FROM json_each(?))`);
      params.push(JSON.stringify(q.statuses));
    }
    if (q.fromMs !== null) {
      where.push('s.due_ms >= ?');
      params.push(q.fromMs);
    }
    if (q.toMs !== null) {
      where.push('s.due_ms < ?');
      params.push(q.toMs);
    }
    if (q.rolloutId !== null) {
      where.push('s.rollout_id = ?');
      params.push(q.rolloutId);
    }
    const sql = `SELECT ${SCHEDULE_COLUMNS} FROM schedules s ${where.length === 0 ? '' : 'WHERE ' + where.join(' AND ')} ORDER BY s.due_ms, s.schedule_id LIMIT ?`;
    return this.db.prepare<ScheduleRow>(sql).all(...params, q.limit);
  }

  dueSchedules(nowMs: number, limit: number): ScheduleRow[] {
    return this.dueStmt.all(nowMs, limit);
  }

  pendingTouching(envId: string, keys: readonly string[], beforeMs: number, beforeId: string): ScheduleRow[] {
    if (keys.length === 0) return [];
    return this.touchingStmt.all({ env: envId, keys: JSON.stringify(keys), before: beforeMs, beforeId });
  }

  openTouching(envId: string, idLower: string): ScheduleRow[] {
    return idLower === '' ? this.openOfEnvStmt.all(envId, envId) : this.openTouchingStmt.all({ env: envId, key: idLower });
  }

  openOfToken(tokenId: string): ScheduleRow[] {
    return this.openOfTokenStmt.all(tokenId);
  }

  settleSchedule(scheduleId: string, from: readonly ScheduleStatus[], o: ScheduleOutcomeRow): number {
    return this.settleStmt.run({ id: scheduleId, from: JSON.stringify(from), ...o }).changes;
  }

  settleApplied(applied: readonly AppliedRow[], settledAt: string): number {
    let n = 0;
    for (const a of applied) {
      n += this.settleStmt.run({ id: a.scheduleId, from: '["pending"]', status: 'applied', settledAt, lateMs: a.lateMs, errorCode: null, errorMessage: null, result: a.result }).changes;
    }
    return n;
  }

  moveSchedule(scheduleId: string, dueMs: number): number {
    return this.moveStmt.run(dueMs, scheduleId).changes;
  }

  editSchedule(scheduleId: string, ops: string, note: string, items: readonly ScheduleItem[]): number {
    const changed = this.editStmt.run(ops, note, scheduleId).changes;
    if (changed === 0) return 0;
    this.clearItemsStmt.run(scheduleId);
    for (const item of items) this.insertItemStmt.run(scheduleId, item.envId, item.idLower);
    return changed;
  }

  setScheduleStatus(scheduleId: string, from: ScheduleStatus, to: ScheduleStatus): number {
    return this.statusStmt.run(to, scheduleId, from).changes;
  }

  countOpen(): number {
    return this.countOpenStmt.get()?.n ?? 0;
  }

  nextDueMs(): number | null {
    return this.nextDueStmt.get()?.due ?? null;
  }

  insertRollout(row: RolloutRow): void {
    this.insertRolloutStmt.run(row);
  }

  getRollout(rolloutId: string): RolloutRow | undefined {
    return this.getRolloutStmt.get(rolloutId);
  }

  listRollouts(envId: string | null, limit: number): RolloutRow[] {
    if (envId === null) return this.db.prepare<RolloutRow>(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts ORDER BY rollout_id DESC LIMIT ?`).all(limit);
    return this.db.prepare<RolloutRow>(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE env_id = ? ORDER BY rollout_id DESC LIMIT ?`).all(envId, limit);
  }

  setRolloutStatus(rolloutId: string, status: RolloutRow['status']): void {
    this.rolloutStatusStmt.run(status, rolloutId);
  }

  takeLease(name: string, holder: string, nowMs: number, untilMs: number): LeaseHolder {
    this.takeLeaseStmt.run({ name, holder, until: untilMs, now: nowMs });
    const row = this.leaseStmt.get(name);
    return { holder: row?.holder ?? '', untilMs: row?.until_ms ?? 0, nowMs };
  }

  releaseLease(name: string, holder: string): void {
    this.releaseLeaseStmt.run(name, holder);
  }

  savepoint(name: string): void {
    this.db.exec(`SAVEPOINT ${checkedName(name)}`);
  }

  rollbackTo(name: string): void {
    this.db.exec(`ROLLBACK TO ${checkedName(name)}`);
  }

  releaseSavepoint(name: string): void {
    this.db.exec(`RELEASE ${checkedName(name)}`);
  }
}

/** Savepoint names are the steps' own constants; anything else is a bug, not SQL to run. */
function checkedName(name: string): string {
  if (!NAME.test(name)) throw new Error(`bad savepoint name ${JSON.stringify(name)}`);
  return name;
}

/**
 * The PostgreSQL store's rows for the steps of src/store/ops/: PgContentRows' statements plus the
 * ones of scheduled changes, rollouts, leases and savepoints, run on the caller's transaction.
 */
import type { AppliedRow, AsyncRows, ScheduleItem, ScheduleOutcomeRow } from '../ops/rows.js';
import type { LeaseHolder, RolloutRow, ScheduleQuery, ScheduleRow, ScheduleStatus } from '../schedule/rows.js';
import { PgContentRows } from './content-rows.js';

const SCHEDULE_COLUMNS =
  's.schedule_id, s.env_id, s.due_ms, s.ops, s.note, s.status, s.rollout_id, s.step, s.created_at, s.created_by, s.token_id, s.settled_at, s.late_ms, s.error_code, s.error_message, s.result';
const SCHEDULE_ORDER = 's.due_ms, s.schedule_id COLLATE "C"';
const ROLLOUT_COLUMNS = 'rollout_id, env_id, id_lower, content_id, rule, segment, variant, start, before, steps, status, note, created_at, created_by, token_id';
const SAVEPOINT_NAME = /^[a-z_]+$/;

export class PgRows extends PgContentRows implements AsyncRows {
  /** The database server's clock: every node of a fleet reads the same one. */
  async storeNowMs(): Promise<number> {
    return (await this.firstRow<{ ms: number }>('SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS ms', []))!.ms;
  }

  async insertSchedule(row: ScheduleRow, items: readonly ScheduleItem[]): Promise<void> {
    await this.tx.unsafe(
      `INSERT INTO schedules (schedule_id, env_id, due_ms, ops, note, status, rollout_id, step, created_at, created_by, token_id, settled_at, late_ms, error_code, error_message, result)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        row.schedule_id, row.env_id, row.due_ms, row.ops, row.note, row.status, row.rollout_id, row.step, row.created_at, row.created_by, row.token_id,
        row.settled_at, row.late_ms, row.error_code, row.error_message, row.result,
      ],
      { prepare: true },
    );
    await this.insertItems(row.schedule_id, items);
  }

  private async insertItems(scheduleId: string, items: readonly ScheduleItem[]): Promise<void> {
    if (items.length === 0) return;
    await this.tx.unsafe(
      `INSERT INTO schedule_items (schedule_id, env_id, id_lower)
       SELECT $1, e, k FROM unnest($2::text[], $3::text[]) AS u(e, k) ON CONFLICT DO NOTHING`,
      [scheduleId, items.map((i) => i.envId), items.map((i) => i.idLower)],
    );
  }

  async getSchedule(scheduleId: string): Promise<ScheduleRow | undefined> {
    return this.firstRow<ScheduleRow>(`SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.schedule_id = $1`, [scheduleId]);
  }

  async listSchedules(q: ScheduleQuery): Promise<ScheduleRow[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    if (q.envIds !== null) {
      const envs = param(q.envIds);
      where.push(
        q.incoming
          ? `(s.env_id = ANY(${envs}::text[]) OR EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = ANY(${envs}::text[])))`
          : `s.env_id = ANY(${envs}::text[])`,
      );
    }
    if (q.idLower !== null) {
      // The item of the listed environment: a sync into it names the item there.
      const itemEnv = param(q.incoming && q.envIds !== null ? q.envIds[0] ?? null : null);
      where.push(`EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = coalesce(${itemEnv}::text, s.env_id) AND (i.id_lower = ${param(q.idLower)} OR i.id_lower = ''))`);
    }
    if (q.statuses !== null) where.push(`s.status = ANY(${param(q.statuses)}::text[])`);
    if (q.fromMs !== null) where.push(`s.due_ms >= ${param(q.fromMs)}`);
    if (q.toMs !== null) where.push(`s.due_ms < ${param(q.toMs)}`);
    if (q.rolloutId !== null) where.push(`s.rollout_id = ${param(q.rolloutId)}`);
    const limit = param(q.limit);
    return this.tx.unsafe<ScheduleRow[]>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s ${where.length === 0 ? '' : 'WHERE ' + where.join(' AND ')} ORDER BY ${SCHEDULE_ORDER} LIMIT ${limit}`,
      params as never[],
    );
  }

  async dueSchedules(nowMs: number, limit: number): Promise<ScheduleRow[]> {
    return this.tx.unsafe<ScheduleRow[]>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.status = 'pending' AND s.due_ms <= $1 ORDER BY ${SCHEDULE_ORDER} LIMIT $2`,
      [nowMs, limit],
      { prepare: true },
    );
  }

  async pendingTouching(envId: string, keys: readonly string[], beforeMs: number, beforeId: string): Promise<ScheduleRow[]> {
    if (keys.length === 0) return [];
    return this.tx.unsafe<ScheduleRow[]>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
        WHERE s.status = 'pending' AND (s.due_ms < $2 OR (s.due_ms = $2 AND s.schedule_id COLLATE "C" < $3 COLLATE "C"))
          AND EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = $1
                        AND (i.id_lower = '' OR i.id_lower = ANY($4::text[]) OR '' = ANY($4::text[])))
        ORDER BY ${SCHEDULE_ORDER}`,
      [envId, beforeMs, beforeId, keys as string[]],
    );
  }

  async openTouching(envId: string, idLower: string): Promise<ScheduleRow[]> {
    if (idLower === '') {
      return this.tx.unsafe<ScheduleRow[]>(
        `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
          WHERE s.status IN ('pending', 'paused')
            AND (s.env_id = $1 OR EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = $1))
          ORDER BY ${SCHEDULE_ORDER}`,
        [envId],
      );
    }
    return this.tx.unsafe<ScheduleRow[]>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s
        WHERE s.status IN ('pending', 'paused')
          AND EXISTS (SELECT 1 FROM schedule_items i WHERE i.schedule_id = s.schedule_id AND i.env_id = $1
                        AND (i.id_lower = $2 OR (i.id_lower = '' AND s.env_id <> $1)))
        ORDER BY ${SCHEDULE_ORDER}`,
      [envId, idLower],
    );
  }

  async openOfToken(tokenId: string): Promise<ScheduleRow[]> {
    return this.tx.unsafe<ScheduleRow[]>(
      `SELECT ${SCHEDULE_COLUMNS} FROM schedules s WHERE s.token_id = $1 AND s.status IN ('pending', 'paused') ORDER BY ${SCHEDULE_ORDER}`,
      [tokenId],
    );
  }

  async settleSchedule(scheduleId: string, from: readonly ScheduleStatus[], o: ScheduleOutcomeRow): Promise<number> {
    const rows = await this.tx.unsafe(
      `UPDATE schedules SET status = $1, settled_at = $2, late_ms = $3, error_code = $4, error_message = $5, result = $6
        WHERE schedule_id = $7 AND status = ANY($8::text[])`,
      [o.status, o.settledAt, o.lateMs, o.errorCode, o.errorMessage, o.result, scheduleId, from as string[]],
    );
    return rows.count;
  }

  async settleApplied(applied: readonly AppliedRow[], settledAt: string): Promise<number> {
    if (applied.length === 0) return 0;
    const rows = await this.tx.unsafe(
      `UPDATE schedules s SET status = 'applied', settled_at = $1, late_ms = u.late, error_code = NULL, error_message = NULL, result = u.result
         FROM unnest($2::text[], $3::bigint[], $4::text[]) AS u(id, late, result)
        WHERE s.schedule_id = u.id AND s.status = 'pending'`,
      [settledAt, applied.map((a) => a.scheduleId), applied.map((a) => a.lateMs), applied.map((a) => a.result)] as never[],
    );
    return rows.count;
  }

  async moveSchedule(scheduleId: string, dueMs: number): Promise<number> {
    const rows = await this.tx.unsafe(`UPDATE schedules SET due_ms = $1 WHERE schedule_id = $2 AND status IN ('pending', 'paused')`, [dueMs, scheduleId]);
    return rows.count;
  }

  async editSchedule(scheduleId: string, ops: string, note: string, items: readonly ScheduleItem[]): Promise<number> {
    const rows = await this.tx.unsafe(`UPDATE schedules SET ops = $1, note = $2 WHERE schedule_id = $3 AND status IN ('pending', 'paused')`, [ops, note, scheduleId]);
    if (rows.count === 0) return 0;
    await this.tx.unsafe('DELETE FROM schedule_items WHERE schedule_id = $1', [scheduleId]);
    await this.insertItems(scheduleId, items);
    return rows.count;
  }

  async setScheduleStatus(scheduleId: string, from: ScheduleStatus, to: ScheduleStatus): Promise<number> {
    const rows = await this.tx.unsafe('UPDATE schedules SET status = $1 WHERE schedule_id = $2 AND status = $3', [to, scheduleId, from]);
    return rows.count;
  }

  async countOpen(): Promise<number> {
    return (await this.firstRow<{ n: number }>(`SELECT count(*)::int AS n FROM schedules WHERE status IN ('pending', 'paused')`, []))?.n ?? 0;
  }

  async nextDueMs(): Promise<number | null> {
    return (await this.firstRow<{ due: number | null }>(`SELECT min(due_ms) AS due FROM schedules WHERE status = 'pending'`, []))?.due ?? null;
  }

  async insertRollout(r: RolloutRow): Promise<void> {
    await this.tx.unsafe(
      `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
      [r.rollout_id, r.env_id, r.id_lower, r.content_id, r.rule, r.segment, r.variant, r.start, r.before, r.steps, r.status, r.note, r.created_at, r.created_by, r.token_id],
    );
  }

  async getRollout(rolloutId: string): Promise<RolloutRow | undefined> {
    const rows = await this.tx.unsafe<RolloutRow[]>(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE rollout_id = $1`, [rolloutId]);
    return rows[0];
  }

  async listRollouts(envId: string | null, limit: number): Promise<RolloutRow[]> {
    if (envId === null) return this.tx.unsafe<RolloutRow[]>(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts ORDER BY rollout_id COLLATE "C" DESC LIMIT $1`, [limit]);
    return this.tx.unsafe<RolloutRow[]>(`SELECT ${ROLLOUT_COLUMNS} FROM rollouts WHERE env_id = $1 ORDER BY rollout_id COLLATE "C" DESC LIMIT $2`, [envId, limit]);
  }

  async setRolloutStatus(rolloutId: string, status: RolloutRow['status']): Promise<void> {
    await this.tx.unsafe('UPDATE rollouts SET status = $1 WHERE rollout_id = $2', [status, rolloutId]);
  }

  async takeLease(name: string, holder: string, nowMs: number, untilMs: number): Promise<LeaseHolder> {
    const rows = await this.tx.unsafe<{ holder: string; until_ms: number }[]>(
      `INSERT INTO leases (name, holder, until_ms) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
        WHERE leases.holder = excluded.holder OR leases.until_ms < $4
       RETURNING holder, until_ms`,
      [name, holder, untilMs, nowMs],
      { prepare: true },
    );
    if (rows[0] !== undefined) return { holder: rows[0].holder, untilMs: rows[0].until_ms, nowMs };
    const held = await this.tx.unsafe<{ holder: string; until_ms: number }[]>('SELECT holder, until_ms FROM leases WHERE name = $1', [name], { prepare: true });
    return { holder: held[0]?.holder ?? '', untilMs: held[0]?.until_ms ?? 0, nowMs };
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.tx.unsafe('DELETE FROM leases WHERE name = $1 AND holder = $2', [name, holder]);
  }

  async savepoint(name: string): Promise<void> {
    await this.tx.unsafe(`SAVEPOINT ${savepointName(name)}`);
  }

  async rollbackTo(name: string): Promise<void> {
    await this.tx.unsafe(`ROLLBACK TO SAVEPOINT ${savepointName(name)}`);
  }

  async releaseSavepoint(name: string): Promise<void> {
    await this.tx.unsafe(`RELEASE SAVEPOINT ${savepointName(name)}`);
  }
}

/** Savepoint names are the steps' own constants; anything else is a bug, not SQL to run. */
function savepointName(name: string): string {
  if (!SAVEPOINT_NAME.test(name)) throw new Error(`bad savepoint name ${JSON.stringify(name)}`);
  return name;
}

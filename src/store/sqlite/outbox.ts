/**
 * The webhook outbox of a SQLite store (types.ts, NewOutboxEntry). Every function runs inside a
 * transaction the store opened: an insert inside the write that made the change, a claim inside
 * an IMMEDIATE transaction so two processes on the file never lease the same row.
 */
import type { Database } from './driver.js';
import { outboxFromRow, type OutboxRow } from '../rows.js';
import { settleStatements } from '../outbox-settle.js';
import type { NewOutboxEntry, OutboxEntry, OutboxOutcome } from '../types.js';

const COLUMNS = 'id, hook_id, event, body, attempts, created_at, last_error, dead_at';

export function insertOutbox(db: Database, entries: readonly NewOutboxEntry[], nowMs: number, dueMs: number): void {
  if (entries.length === 0) return;
  const stmt = db.prepare('INSERT INTO webhook_outbox (id, hook_id, event, body, created_at, next_attempt_ms) VALUES (?, ?, ?, ?, ?, ?)');
  const at = new Date(nowMs).toISOString();
  for (const e of entries) stmt.run(e.id, e.hookId, e.event, e.body, at, dueMs);
}

export function releaseOutbox(db: Database, ids: readonly string[], atMs: number): void {
  const stmt = db.prepare('UPDATE webhook_outbox SET next_attempt_ms = ? WHERE id = ? AND dead_at IS NULL AND attempts = 0 AND next_attempt_ms > ?');
  for (const id of ids) stmt.run(atMs, id, atMs);
}

export function anyDue(db: Database, nowMs: number): boolean {
  return db.prepare('SELECT 1 FROM webhook_outbox WHERE dead_at IS NULL AND next_attempt_ms <= ? LIMIT 1').get(nowMs) !== undefined;
}

export function claimOutbox(db: Database, nowMs: number, leaseUntilMs: number, limit: number): OutboxEntry[] {
  const rows = db
    .prepare<OutboxRow & { seq: number }>(
      `SELECT seq, ${COLUMNS} FROM webhook_outbox WHERE dead_at IS NULL AND next_attempt_ms <= ? ORDER BY seq LIMIT ?`,
    )
    .all(nowMs, limit);
  const lease = db.prepare('UPDATE webhook_outbox SET next_attempt_ms = ? WHERE seq = ?');
  for (const r of rows) lease.run(leaseUntilMs, r.seq);
  return rows.map(outboxFromRow);
}

export function settleOutbox(db: Database, id: string, outcome: OutboxOutcome, nowMs: number): void {
  for (const statement of settleStatements(id, outcome, nowMs)) db.prepare(statement.text).run(...statement.params);
}

export function listDeadLetters(db: Database, limit: number): OutboxEntry[] {
  return db
    .prepare<OutboxRow>(`SELECT ${COLUMNS} FROM webhook_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, seq DESC LIMIT ?`)
    .all(limit)
    .map(outboxFromRow);
}

export function outboxCounts(db: Database): { pending: number; dead: number } {
  const row = db
    .prepare<{ pending: number | null; dead: number | null }>(
      'SELECT sum(dead_at IS NULL) AS pending, sum(dead_at IS NOT NULL) AS dead FROM webhook_outbox',
    )
    .get();
  return { pending: row?.pending ?? 0, dead: row?.dead ?? 0 };
}

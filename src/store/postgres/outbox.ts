/**
 * The webhook outbox of a PostgreSQL store (types.ts, NewOutboxEntry): the same rows and rules as
 * the SQLite store's (src/store/sqlite/outbox.ts). A claim takes due rows with FOR UPDATE SKIP
 * LOCKED, so the nodes of a fleet share the work and never lease one row twice.
 */
import type { Sql, Tx } from './connection.js';
import { outboxFromRow, type OutboxRow } from '../rows.js';
import type { NewOutboxEntry, OutboxEntry, OutboxOutcome } from '../types.js';

const COLUMNS = 'id, hook_id, event, body, attempts, created_at, last_error, dead_at';

export async function insertOutbox(tx: Tx, entries: readonly NewOutboxEntry[], nowMs: number, dueMs: number): Promise<void> {
  if (entries.length === 0) return;
  const at = new Date(nowMs).toISOString();
  await tx.unsafe(
    `INSERT INTO webhook_outbox (id, hook_id, event, body, created_at, next_attempt_ms)
     SELECT id, hook_id, event, body, $5, $6 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS t(id, hook_id, event, body)`,
    [entries.map((e) => e.id), entries.map((e) => e.hookId), entries.map((e) => e.event), entries.map((e) => e.body), at, dueMs],
  );
}

export async function releaseOutbox(sql: Sql, ids: readonly string[], atMs: number): Promise<void> {
  if (ids.length === 0) return;
  await sql.unsafe('UPDATE webhook_outbox SET next_attempt_ms = $2 WHERE id = ANY($1::text[]) AND dead_at IS NULL AND attempts = 0 AND next_attempt_ms > $2', [
    ids as string[],
    atMs,
  ]);
}

export async function claimOutbox(sql: Sql, nowMs: number, leaseUntilMs: number, limit: number): Promise<OutboxEntry[]> {
  const rows = await sql.unsafe<(OutboxRow & { seq: string })[]>(
    `UPDATE webhook_outbox SET next_attempt_ms = $2
     WHERE seq IN (SELECT seq FROM webhook_outbox WHERE dead_at IS NULL AND next_attempt_ms <= $1 ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING seq, ${COLUMNS}`,
    [nowMs, leaseUntilMs, limit],
  );
  return [...rows].sort((a, b) => Number(a.seq) - Number(b.seq)).map(outboxFromRow);
}

export async function settleOutbox(sql: Sql, id: string, outcome: OutboxOutcome, nowMs: number): Promise<void> {
  switch (outcome.kind) {
    case 'delivered':
      await sql.unsafe('DELETE FROM webhook_outbox WHERE id = $1', [id]);
      return;
    case 'retry':
      await sql.unsafe('UPDATE webhook_outbox SET next_attempt_ms = $1, last_error = $2, attempts = attempts + $3 WHERE id = $4', [
        outcome.atMs,
        outcome.error,
        outcome.counted ? 1 : 0,
        id,
      ]);
      return;
    case 'dead':
      await sql.begin(async (tx) => {
        await tx.unsafe('UPDATE webhook_outbox SET dead_at = $1, last_error = $2, attempts = attempts + 1 WHERE id = $3', [
          new Date(nowMs).toISOString(),
          outcome.error,
          id,
        ]);
        // The list is bounded: the oldest dead letters beyond the bound go.
        await tx.unsafe(
          'DELETE FROM webhook_outbox WHERE dead_at IS NOT NULL AND seq NOT IN (SELECT seq FROM webhook_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, seq DESC LIMIT $1)',
          [outcome.keepDead],
        );
      });
      return;
  }
}

export async function listDeadLetters(sql: Sql, limit: number): Promise<OutboxEntry[]> {
  const rows = await sql.unsafe<OutboxRow[]>(
    `SELECT ${COLUMNS} FROM webhook_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, seq DESC LIMIT $1`,
    [limit],
  );
  return rows.map(outboxFromRow);
}

export async function outboxCounts(sql: Sql): Promise<{ pending: number; dead: number }> {
  const rows = await sql.unsafe<{ pending: number; dead: number }[]>(
    'SELECT count(*) FILTER (WHERE dead_at IS NULL)::int AS pending, count(*) FILTER (WHERE dead_at IS NOT NULL)::int AS dead FROM webhook_outbox',
  );
  return { pending: rows[0]?.pending ?? 0, dead: rows[0]?.dead ?? 0 };
}

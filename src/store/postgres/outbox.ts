/**
 * The webhook outbox of a PostgreSQL store (types.ts, NewOutboxEntry): the same rows and rules as
 * the SQLite store's (src/store/sqlite/outbox.ts). A claim takes due rows with FOR UPDATE SKIP
 * LOCKED, so the nodes of a fleet share the work and never lease one row twice.
 */
import type { Sql, Tx } from './connection.js';
import { transaction } from './transaction.js';
import { outboxFromRow, type OutboxRow } from '../rows.js';
import { settleStatements } from '../outbox-settle.js';
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

/** A settle statement with PostgreSQL's numbered placeholders (`$1`, `$2`, ...) for its `?`s. */
function numbered(text: string): string {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

/** One statement runs alone; a dead letter's two (mark, then trim the list) run in one transaction. */
export async function settleOutbox(sql: Sql, id: string, outcome: OutboxOutcome, nowMs: number): Promise<void> {
  const statements = settleStatements(id, outcome, nowMs);
  if (statements.length === 1) {
    await sql.unsafe(numbered(statements[0]!.text), statements[0]!.params as never[]);
    return;
  }
  await transaction(sql, async (tx) => {
    for (const statement of statements) await tx.unsafe(numbered(statement.text), statement.params as never[]);
  });
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

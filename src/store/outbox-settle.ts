/**
 * How an outbox attempt's end is recorded (Store.settleOutbox): the statements, in order, with their
 * parameters. One definition for both stores, which share the webhook_outbox table: the SQLite store
 * runs them as written, the PostgreSQL store with its placeholders numbered.
 */
import type { OutboxOutcome } from './types.js';

/** A statement with `?` for each parameter, and the parameters in order. */
export interface SettleStatement {
  readonly text: string;
  readonly params: readonly unknown[];
}

export function settleStatements(id: string, outcome: OutboxOutcome, nowMs: number): readonly SettleStatement[] {
  switch (outcome.kind) {
    case 'delivered':
      return [{ text: 'DELETE FROM webhook_outbox WHERE id = ?', params: [id] }];
    case 'retry':
      return [
        {
          text: 'UPDATE webhook_outbox SET next_attempt_ms = ?, last_error = ?, attempts = attempts + ? WHERE id = ?',
          params: [outcome.atMs, outcome.error, outcome.counted ? 1 : 0, id],
        },
      ];
    case 'dead':
      return [
        {
          text: 'UPDATE webhook_outbox SET dead_at = ?, last_error = ?, attempts = attempts + 1 WHERE id = ?',
          params: [new Date(nowMs).toISOString(), outcome.error, id],
        },
        // The list is bounded: the oldest dead letters beyond the bound go.
        {
          text: 'DELETE FROM webhook_outbox WHERE dead_at IS NOT NULL AND seq NOT IN (SELECT seq FROM webhook_outbox WHERE dead_at IS NOT NULL ORDER BY dead_at DESC, seq DESC LIMIT ?)',
          params: [outcome.keepDead],
        },
      ];
  }
}

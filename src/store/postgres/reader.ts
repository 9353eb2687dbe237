/**
 * A worker thread's reader of a PostgreSQL store: revision texts and mapping texts by immutable id,
 * every miss of one batch in one round trip.
 *
 * One connection per worker thread, opened at the first miss and closed after a minute idle. The
 * alternative, asking the control thread (which holds the pool) over a message port, would cost two
 * extra hops per batch and needs a port per Piscina worker, which Piscina cannot hand out; a worker
 * that misses holds one connection at most, so a node uses at most --pg-pool-size + 1 (LISTEN) +
 * --threads connections (docs/fleet.md, "Sizing").
 */
import postgres from 'postgres';
import type { RevisionSource, RevisionText } from '../types.js';
import { connect, DEFAULT_PG_CONNECT_TIMEOUT_MS, isUnreachable, lostConnectionsClosed } from './connection.js';
import { answeredWithin, isStalled, STALL_MS } from './silence.js';

const RETRIES = 2;

export class PostgresRevisionSource implements RevisionSource {
  private readonly url: string;
  /** Replaced when the database falls silent (silent()). */
  private sql: postgres.Sql;

  constructor(url: string) {
    this.url = url;
    this.sql = connect(url, { poolSize: 1, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
  }

  /**
   * Retries a lost connection (reads are idempotent): a connection idle while the database
   * restarted holds the shutdown's error (57P01) and hands it to the next query, which fails
   * without reaching the server; the attempts after it open a new connection (once the driver has
   * seen the lost one close: lostConnectionsClosed). A database that is really down refuses them at
   * once, and the batch answers 503 store_unavailable. A batch the database has not answered within
   * STALL_MS (a partition that drops packets) answers that too, and the connection is replaced.
   */
  private async query<T extends object[]>(text: string, params: unknown[]): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const sql = this.sql;
        return await answeredWithin(sql.unsafe<T>(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }), STALL_MS, () => this.silent(sql));
      } catch (err) {
        if (!isUnreachable(err)) throw err;
        await lostConnectionsClosed();
        if (attempt >= RETRIES || isStalled(err)) throw err;
      }
    }
  }

  async readRevisions(revIds: readonly number[]): Promise<Map<number, RevisionText>> {
    const out = new Map<number, RevisionText>();
    if (revIds.length === 0) return out;
    const rows = await this.query<{ rev_id: number; minified: string; hash: string }[]>(
      'SELECT rev_id, minified, hash FROM revisions WHERE rev_id = ANY($1::bigint[])',
      [revIds],
    );
    for (const r of rows) out.set(r.rev_id, { revId: r.rev_id, minified: r.minified, hash: r.hash });
    return out;
  }

  async readMappings(mappingIds: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (mappingIds.length === 0) return out;
    const rows = await this.query<{ mapping_id: number; json: string }[]>('SELECT mapping_id, json FROM mappings WHERE mapping_id = ANY($1::bigint[])', [
      mappingIds,
    ]);
    for (const r of rows) out.set(r.mapping_id, r.json);
    return out;
  }

  /** The connection `sql` went silent: a new one serves the next batch (this batch's wait is given up). */
  private silent(sql: postgres.Sql): void {
    if (sql !== this.sql) return;
    this.sql = connect(this.url, { poolSize: 1, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
    sql.end({ timeout: 0 }).catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 1 });
  }
}

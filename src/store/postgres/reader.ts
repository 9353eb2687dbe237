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
import { connect, DEFAULT_PG_CONNECT_TIMEOUT_MS } from './connection.js';

export class PostgresRevisionSource implements RevisionSource {
  private readonly sql: postgres.Sql;

  constructor(url: string) {
    this.sql = connect(url, { poolSize: 1, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
  }

  async readRevisions(revIds: readonly number[]): Promise<Map<number, RevisionText>> {
    const out = new Map<number, RevisionText>();
    if (revIds.length === 0) return out;
    const rows = await this.sql.unsafe<{ rev_id: number; minified: string; hash: string }[]>(
      'SELECT rev_id, minified, hash FROM revisions WHERE rev_id = ANY($1::bigint[])',
      [revIds as number[]],
      { prepare: true },
    );
    for (const r of rows) out.set(r.rev_id, { revId: r.rev_id, minified: r.minified, hash: r.hash });
    return out;
  }

  async readMappings(mappingIds: readonly number[]): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    if (mappingIds.length === 0) return out;
    const rows = await this.sql.unsafe<{ mapping_id: number; json: string }[]>(
      'SELECT mapping_id, json FROM mappings WHERE mapping_id = ANY($1::bigint[])',
      [mappingIds as number[]],
      { prepare: true },
    );
    for (const r of rows) out.set(r.mapping_id, r.json);
    return out;
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 1 });
  }
}

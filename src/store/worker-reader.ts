/**
 * The read-only revision reader of a worker thread: revisions and mappings by immutable id, from
 * the store whose `readerUrl` the thread was given. Kept apart from src/store/index.ts so that a
 * render worker loads the SQLite driver and this reader, not the whole store.
 */
import { DEFAULT_BUSY_TIMEOUT_MS, openReader, type Database } from './sqlite/driver.js';
import { RcdError } from '../runtime/errors.js';
import { parseStoreUrl } from './location.js';
import { PostgresRevisionSource } from './postgres/reader.js';
import type { OpenStoreOptions, RevisionReader, RevisionSource, RevisionText } from './types.js';
import { isPostgresUrl } from './url.js';

/** A worker thread's reader: synchronous for SQLite stores, batched and awaited for PostgreSQL. */
export function openWorkerReader(readerUrl: string): RevisionReader | RevisionSource {
  return isPostgresUrl(readerUrl) ? new PostgresRevisionSource(readerUrl) : openRevisionReader(readerUrl);
}

export function isRevisionSource(r: RevisionReader | RevisionSource): r is RevisionSource {
  return 'readRevisions' in r;
}

/**
 * A read-only connection for one worker thread, with its two statements prepared once.
 * Revisions and mappings are immutable, so what it reads by id never changes; an id that is gone
 * (its content was deleted) reads as undefined.
 */
export function openRevisionReader(readerUrl: string, opts: OpenStoreOptions = {}): RevisionReader {
  const loc = parseStoreUrl(readerUrl);
  if (loc.kind === 'memory' && readerUrl === 'memory:') {
    throw new RcdError('invalid_request', 'a reader needs the store readerUrl (memory:NAME), not memory:');
  }
  return new SqliteRevisionReader(openReader(loc, opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS));
}

class SqliteRevisionReader implements RevisionReader {
  private readonly db: Database;
  private readonly revisionStmt;
  private readonly mappingStmt;

  constructor(db: Database) {
    this.db = db;
    this.revisionStmt = db.prepare<{ minified: string; hash: string }>('SELECT minified, hash FROM revisions WHERE rev_id = ?');
    this.mappingStmt = db.prepare<{ json: string }>('SELECT json FROM mappings WHERE mapping_id = ?');
  }

  readRevision(revId: number): RevisionText | undefined {
    const row = this.revisionStmt.get(revId);
    if (row === undefined) return undefined;
    return { revId, minified: row.minified, hash: row.hash };
  }

  readMapping(mappingId: number): string | undefined {
    const row = this.mappingStmt.get(mappingId);
    return row === undefined ? undefined : row.json;
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

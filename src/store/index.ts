/**
 * Opening stores by URL, and the read-only revision reader worker threads use.
 *
 * - `sqlite:PATH`: a SQLite file (parent directories created, WAL, foreign keys, busy timeout).
 * - `memory:`: a fresh in-memory SQLite database with a unique name, shared with the worker threads
 *   of this process (SQLite memdb VFS) for as long as the store is open. `memory:NAME` opens (or
 *   creates) the named one; the store's `readerUrl` is always that form.
 * - `postgres://user:password@host:port/database` (or `postgresql://`): a PostgreSQL database that
 *   several nodes share (src/store/postgres/, docs/fleet.md); the schema is created or upgraded.
 *
 * The store's `readerUrl` is what a worker passes to `openWorkerReader` (or, for SQLite only,
 * `openRevisionReader`).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { RcdError } from '../runtime/errors.js';
import { settle } from '../shared/settle.js';
import { DEFAULT_BUSY_TIMEOUT_MS, openReader, openWriter, type Database, type DbLocation } from './sqlite/driver.js';
import { SqliteStore } from './sqlite/store.js';
import { connect, DEFAULT_PG_CONNECT_TIMEOUT_MS, DEFAULT_PG_POOL_SIZE, describePgError, isUnreachable } from './postgres/connection.js';
import { enableUriFilenames, isPostgresUrl, redactPostgresUrl } from './url.js';
import { PostgresRevisionSource } from './postgres/reader.js';
import { migrate as migratePostgres } from './postgres/schema.js';
import { PostgresStore } from './postgres/store.js';
import type { RevisionReader, RevisionSource, RevisionText, Store } from './types.js';

export type { Store, RevisionReader, RevisionSource } from './types.js';
export { describeStoreUrl, isPostgresUrl } from './url.js';
export { apiKeyDigest, contentIdKey } from './ids.js';

// Before any connection of this process exists (see driver.ts: memdb needs URI filenames).
enableUriFilenames();

export interface OpenStoreOptions {
  /** How long a write waits for another connection's lock before failing with store_busy (default 5000 ms). */
  readonly busyTimeoutMs?: number;
  /** PostgreSQL: connections of the store's pool (default DEFAULT_PG_POOL_SIZE). */
  readonly poolSize?: number;
}

const MEMORY_NAME = /^[A-Za-z0-9_-]{1,100}$/;
let memoryCounter = 0;

/** Parses a store URL. Throws invalid_request for an unknown scheme or a malformed URL. */
export function parseStoreUrl(url: string): DbLocation {
  if (typeof url !== 'string') throw new RcdError('invalid_request', 'the store URL must be a string');
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path.length === 0) throw new RcdError('invalid_request', 'sqlite: needs a file path, e.g. sqlite:./data/rcd.db');
    return { kind: 'file', path: resolve(path) };
  }
  if (url.startsWith('memory:')) {
    const name = url.slice('memory:'.length);
    if (name.length === 0) {
      memoryCounter++;
      return { kind: 'memory', name: `${process.pid}-${memoryCounter}-${randomBytes(6).toString('hex')}` };
    }
    if (!MEMORY_NAME.test(name)) throw new RcdError('invalid_request', 'memory:NAME takes 1-100 of A-Z a-z 0-9 _ -');
    return { kind: 'memory', name };
  }
  throw new RcdError(
    'invalid_request',
    `unknown store URL ${JSON.stringify(url)}: use sqlite:PATH (e.g. sqlite:./data/rcd.db), memory: or postgres://user:password@host:port/database`,
  );
}

function readerUrlOf(loc: DbLocation): string {
  return loc.kind === 'file' ? `sqlite:${loc.path}` : `memory:${loc.name}`;
}

export function openStore(url: string, opts: OpenStoreOptions = {}): Promise<Store> {
  if (typeof url === 'string' && isPostgresUrl(url)) return openPostgresStore(url, opts);
  return settle(() => {
    const loc = parseStoreUrl(url);
    const db = openWriter(loc, opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS);
    try {
      return new SqliteStore(db, readerUrlOf(loc), loc.kind === 'file' ? loc.path : null);
    } catch (err) {
      db.close();
      throw err;
    }
  });
}

/**
 * Connects and migrates. An unreachable database is store_unavailable (the caller may retry); a
 * database of a newer schema is store_schema_too_new.
 */
async function openPostgresStore(url: string, opts: OpenStoreOptions): Promise<Store> {
  const poolSize = opts.poolSize ?? DEFAULT_PG_POOL_SIZE;
  const sql = connect(url, { poolSize, connectTimeoutMs: DEFAULT_PG_CONNECT_TIMEOUT_MS });
  try {
    await migratePostgres(sql);
  } catch (err) {
    await sql.end({ timeout: 1 }).catch(() => undefined);
    if (isUnreachable(err)) throw new RcdError('store_unavailable', `the database ${redactPostgresUrl(url)} is unreachable: ${describePgError(err)}`);
    throw err;
  }
  return new PostgresStore(sql, url, opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS, poolSize);
}

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

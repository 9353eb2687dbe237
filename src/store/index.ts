/**
 * Opening stores by URL; the read-only revision reader worker threads use is re-exported from
 * src/store/worker-reader.ts, which a render worker imports directly.
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
import { settle } from '../shared/settle.js';
import { DEFAULT_BUSY_TIMEOUT_MS, openWriter, type DbLocation } from './sqlite/driver.js';
import { SqliteStore } from './sqlite/store.js';
import { enableUriFilenames, isPostgresUrl } from './url.js';
import { parseStoreUrl } from './location.js';
import type { OpenStoreOptions, Store } from './types.js';

export type { Store, RevisionReader, RevisionSource, OpenStoreOptions } from './types.js';
export { describeStoreUrl, isPostgresUrl } from './url.js';
export { apiKeyDigest, contentIdKey } from './ids.js';
export { parseStoreUrl } from './location.js';
export { isRevisionSource, openRevisionReader, openWorkerReader } from './worker-reader.js';

// Before any connection of this process exists (see driver.ts: memdb needs URI filenames).
enableUriFilenames();

function readerUrlOf(loc: DbLocation): string {
  return loc.kind === 'file' ? `sqlite:${loc.path}` : `memory:${loc.name}`;
}

export function openStore(url: string, opts: OpenStoreOptions = {}): Promise<Store> {
  // The PostgreSQL store's modules load with the first PostgreSQL URL: a SQLite store never needs them.
  if (typeof url === 'string' && isPostgresUrl(url)) return import('./postgres/open.js').then((m) => m.openPostgresStore(url, opts));
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

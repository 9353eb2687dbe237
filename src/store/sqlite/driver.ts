/**
 * Opening SQLite connections (better-sqlite3) for the store and for worker-thread readers.
 *
 * The typed surface below is the part of better-sqlite3 the store uses; the package ships no types
 * and the store needs only these few calls.
 *
 * In-memory stores: better-sqlite3 is built with SQLITE_OMIT_SHARED_CACHE and URI filenames off, so
 * `file:NAME?mode=memory&cache=shared` would silently create a file of that name on disk. What works
 * is SQLite's `memdb` VFS with a name starting with `/`: one in-memory database shared by every
 * connection of the process, worker threads included. It needs URI filenames, which better-sqlite3
 * switches on when SQLITE_USE_URI=1 is in the environment the first time a connection is opened in
 * the process; `enableUriFilenames()` (src/store/url.ts) sets it and every open verifies the result.
 */
import { chmodSync, closeSync, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { RcdError } from '../../runtime/errors.js';
import { makeDirectories } from '../../runtime/directories.js';
import { enableUriFilenames } from '../url.js';

export interface RunResult {
  readonly changes: number;
  readonly lastInsertRowid: number | bigint;
}

export interface Statement<Row> {
  run(...params: unknown[]): RunResult;
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
  /** Row by row: a row not kept is garbage at once, where all() keeps every row alive until it returns. */
  iterate(...params: unknown[]): IterableIterator<Row>;
  /**
   * Rows as arrays of the selected columns in order, not objects (this statement, switched):
   * better-sqlite3 names every column of every object row with a string lookup, which a large
   * snapshot read skips this way.
   */
  raw<Tuple extends unknown[]>(toggle: boolean): Statement<Tuple>;
}

export interface TransactionFunction<T, A extends unknown[] = []> {
  (...args: A): T;
  immediate(...args: A): T;
}

export interface Database {
  readonly open: boolean;
  prepare<Row = unknown>(sql: string): Statement<Row>;
  exec(sql: string): void;
  pragma(sql: string, options?: { simple: boolean }): unknown;
  transaction<T, A extends unknown[] = []>(fn: (...args: A) => T): TransactionFunction<T, A>;
  close(): void;
}

interface DatabaseConstructor {
  new (filename: string, options?: { readonly?: boolean; fileMustExist?: boolean }): Database;
}

const require = createRequire(import.meta.url);
const BetterSqlite3 = require('better-sqlite3') as DatabaseConstructor;

export type DbLocation = { readonly kind: 'file'; readonly path: string } | { readonly kind: 'memory'; readonly name: string };

export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

export function memdbFilename(name: string): string {
  return `file:/rcd-mem-${name}?vfs=memdb`;
}

/** Opens the store's read-write connection: WAL (files), foreign keys, busy timeout. */
export function openWriter(loc: DbLocation, busyTimeoutMs: number): Database {
  enableUriFilenames();
  let db: Database;
  if (loc.kind === 'file') {
    makeDirectories(dirname(loc.path), 0o700);
    makeStoreFilesPrivate(loc.path);
    db = new BetterSqlite3(loc.path);
    db.pragma('journal_mode = WAL');
    // FULL: a write that answered 2xx survives a power loss. Writes are rare admin calls, so the
    // extra fsync per commit costs nothing that matters.
    db.pragma('synchronous = FULL');
  } else {
    db = openMemdb(loc.name, false);
  }
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  return db;
}

/**
 * The store holds key digests, content and (sealed) webhook secrets: only the server's user may read
 * it. SQLite creates the `-wal` and `-shm` files with the mode of the database file, so creating the
 * database 0600 before SQLite opens it (an empty file is a valid empty database) makes all three
 * 0600 whatever the umask; files a looser umask or a restored backup left readable are tightened.
 */
export function makeStoreFilesPrivate(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (const file of [path, path + '-wal', path + '-shm']) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
    if ((mode & 0o077) !== 0) chmodSync(file, mode & 0o700);
  }
}

/** A read-only connection for a worker thread. */
export function openReader(loc: DbLocation, busyTimeoutMs: number): Database {
  enableUriFilenames();
  let db: Database;
  if (loc.kind === 'file') {
    try {
      db = new BetterSqlite3(loc.path, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw new RcdError('internal', `cannot open the store ${loc.path} for reading: ${(err as Error).message}`);
    }
  } else {
    db = openMemdb(loc.name, true);
  }
  db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  const tables = db.prepare<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 'revisions'").get();
  if (tables === undefined || tables.n === 0) {
    db.close();
    throw new RcdError('internal', `the store ${describe(loc)} has no schema (is the store open?)`);
  }
  return db;
}

function openMemdb(name: string, readonly: boolean): Database {
  let db: Database;
  try {
    db = new BetterSqlite3(memdbFilename(name), { readonly });
  } catch {
    throw uriOffError(name);
  }
  const list = db.pragma('database_list') as { name: string; file: string }[];
  const main = list.find((d) => d.name === 'main');
  if (main === undefined || main.file !== '') {
    db.close();
    throw uriOffError(name);
  }
  return db;
}

function uriOffError(name: string): RcdError {
  return new RcdError(
    'internal',
    `memory:${name}: SQLite URI filenames are off in this process (a better-sqlite3 connection was opened ` +
      'before the store module set SQLITE_USE_URI=1); open stores through src/store/index.js first',
  );
}

function describe(loc: DbLocation): string {
  return loc.kind === 'file' ? loc.path : `memory:${loc.name}`;
}

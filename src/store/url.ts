/**
 * Store URLs as text: which kind of store one names, how logs and messages show it, and what a
 * memory: URL needs of the process. Kept apart from the drivers so that the main thread of
 * `rcd serve`, which only names the store, loads neither better-sqlite3 nor postgres.js.
 */

export function isPostgresUrl(url: string): boolean {
  return url.startsWith('postgres://') || url.startsWith('postgresql://');
}

/** The URL with its password replaced, for logs and messages. */
export function redactPostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * Turns SQLite's URI filenames on for the process (memory: stores use the memdb VFS by a URI,
 * src/store/sqlite/driver.ts). better-sqlite3 reads SQLITE_USE_URI from the process's real
 * environment once, at the first connection the process opens; a worker thread's `process.env` is
 * a copy of its own, so the main thread calls this before any thread opens a store. Absolute file
 * paths never start with "file:", so sqlite:PATH stores open as before.
 */
export function enableUriFilenames(): void {
  process.env.SQLITE_USE_URI = '1';
}

/** The store URL as logs and messages show it: a PostgreSQL password never appears. */
export function describeStoreUrl(url: string): string {
  return isPostgresUrl(url) ? redactPostgresUrl(url) : url;
}

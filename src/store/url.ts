/**
 * Store URLs as text: which kind of store one names, and how logs and messages show it. Kept apart
 * from the drivers so that a thread that only names the store (the main thread's start-up lines)
 * loads neither better-sqlite3 nor postgres.js.
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

/** The store URL as logs and messages show it: a PostgreSQL password never appears. */
export function describeStoreUrl(url: string): string {
  return isPostgresUrl(url) ? redactPostgresUrl(url) : url;
}

/**
 * Opens the admin state of a store URL. It lives beside the Store rather than inside it because none
 * of it is needed to serve a request: the Store interface stays the delivery contract. A `sqlite:`
 * store's admin tables share its database file; a PostgreSQL store's are tables of the same
 * database; a `memory:` store's live in this process only.
 */
import { dirname, resolve } from 'node:path';
import { RcdError } from '../../runtime/errors.js';
import { makeDirectories } from '../../runtime/directories.js';
import { makeStoreFilesPrivate, memdbFilename } from '../../store/sqlite/driver.js';
import { DEFAULT_PG_CONNECT_TIMEOUT_MS } from '../../store/postgres/connection.js';
import { enableUriFilenames, isPostgresUrl } from '../../store/url.js';
import { ephemeralSealKey, loadSealKey } from './sealed.js';
import type { AdminStateStore } from './state.js';
import { PostgresAdminState } from './state-postgres.js';
import { SqliteAdminState } from './state-sqlite.js';

export interface AdminStateOptions {
  /**
   * Where the webhook key file is kept (`sqlite:` stores only). Default: the database file's
   * folder, the same default as `--data-dir`.
   */
  readonly dataDir?: string;
  /** Operator-facing notes (secrets sealed on upgrade, a secret that no longer opens). */
  readonly log?: (line: string) => void;
  /** How long a write waits for another connection's lock (default 5000 ms), as --store-busy-timeout. */
  readonly busyTimeoutMs?: number;
}

/**
 * Opens the admin state for a store URL: `sqlite:PATH` shares the store's database file and seals
 * webhook secrets with `<dataDir>/webhook-key`; `postgres://` keeps it in the store's database
 * (state-postgres.ts), sealed with `<dataDir>/webhook-key`; `memory:NAME` keeps it in the in-memory
 * store of that name (the store's readerUrl), `memory:` in a database of its own; both in this process
 * only, sealed with a key that is never written anywhere. A guarded write (guarded()) of a store reads
 * the tokens from the store's database, so a store's admin state is opened on the store's URL.
 */
export function openAdminState(storeUrl: string, opts: AdminStateOptions = {}): AdminStateStore {
  const log = opts.log ?? (() => undefined);
  const busyTimeoutMs = opts.busyTimeoutMs ?? 5000;
  if (storeUrl === 'memory:') return new SqliteAdminState(':memory:', ephemeralSealKey(), log, busyTimeoutMs, 'none');
  if (storeUrl.startsWith('memory:')) {
    enableUriFilenames();
    return new SqliteAdminState(memdbFilename(storeUrl.slice('memory:'.length)), ephemeralSealKey(), log, busyTimeoutMs, 'memory');
  }
  if (isPostgresUrl(storeUrl)) {
    const { key } = loadSealKey(opts.dataDir ?? resolve('data'));
    return new PostgresAdminState(storeUrl, key, log, DEFAULT_PG_CONNECT_TIMEOUT_MS);
  }
  if (storeUrl.startsWith('sqlite:')) {
    const path = storeUrl.slice('sqlite:'.length);
    if (path === '') throw new RcdError('invalid_request', 'store URL "sqlite:" needs a file path');
    makeDirectories(dirname(path), 0o700);
    makeStoreFilesPrivate(path);
    const { key } = loadSealKey(opts.dataDir ?? dirname(resolve(path)));
    return new SqliteAdminState(path, key, log, busyTimeoutMs, 'file');
  }
  throw new RcdError('invalid_request', `unsupported store URL "${storeUrl}" (expected sqlite:PATH, memory: or postgres://...)`);
}

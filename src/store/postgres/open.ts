/**
 * Opening a PostgreSQL store: connect, create or upgrade the schema, and wrap the pool in the Store.
 */
import { RcdError } from '../../runtime/errors.js';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../sqlite/driver.js';
import type { OpenStoreOptions, Store } from '../types.js';
import { redactPostgresUrl } from '../url.js';
import { connect, DEFAULT_PG_CONNECT_TIMEOUT_MS, DEFAULT_PG_POOL_SIZE, describePgError, isUnreachable } from './connection.js';
import { migrate as migratePostgres } from './schema.js';
import { PostgresStore } from './store.js';

/**
 * Connects and migrates. An unreachable database is store_unavailable (the caller may retry); a
 * database of a newer schema is store_schema_too_new.
 */
export async function openPostgresStore(url: string, opts: OpenStoreOptions): Promise<Store> {
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

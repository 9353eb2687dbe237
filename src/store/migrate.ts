/**
 * `rcd migrate`: copies a store (SQLite, the usual case) into an empty PostgreSQL database, to move
 * a single node to a fleet. What is copied: environments, every revision of every content item
 * (texts exactly as stored, so hashes are unchanged), current mappings, and the API keys that are
 * not revoked, as their digests with their key ids (clients keep their keys). Not copied: revoked
 * keys, key last-use times, superseded mapping rows, the audit log and webhooks (docs/fleet.md).
 * Revision and mapping ids are new numbers in the target; nothing outside a store refers to them.
 */
import { RcdError } from '../runtime/errors.js';
import { describeStoreUrl, isPostgresUrl, openStore } from './index.js';
import { PostgresStore } from './postgres/store.js';
import type { ImportReport } from './types.js';

export async function migrateStore(fromUrl: string, toUrl: string, opts: { busyTimeoutMs?: number } = {}): Promise<ImportReport> {
  if (!isPostgresUrl(toUrl)) throw new RcdError('invalid_request', `--to must be a postgres:// store, got ${JSON.stringify(describeStoreUrl(toUrl))}`);
  if (fromUrl === toUrl) throw new RcdError('invalid_request', '--from and --to name the same store');
  const source = await openStore(fromUrl, opts);
  try {
    const target = await openStore(toUrl, opts);
    try {
      if (!(target instanceof PostgresStore)) throw new RcdError('internal', 'a postgres:// URL did not open a PostgreSQL store');
      // One read transaction each: the bundle and the keys are the same state of the source.
      const bundle = await source.exportBundle();
      const { keys } = await source.loadDirectory();
      return await target.importWithKeyDigests(bundle, keys);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/**
 * The writes of environments and their API keys, each the part of one store call that runs inside
 * its transaction: written once (rows.ts says how) for both stores. Checks that need no store (ids, the plain key's form) are made by the
 * caller before the transaction.
 */
import { RcdError } from '../../runtime/errors.js';
import { generateKeyId } from '../ids.js';
import { nowIso } from '../sqlite/sql.js';
import { cancelOfEnvironment } from '../schedule/lifecycle.js';
import type { ScheduleRow } from '../schedule/rows.js';
import { requireEnv } from './content.js';
import { call, type Step } from './rows.js';

/** Creates the environment; false when it already exists. */
export function* putEnvironment(envId: string): Step<boolean> {
  if ((yield* call('getEnv', envId)) !== undefined) return false;
  yield* call('insertEnv', envId, nowIso());
  return true;
}

/**
 * Deletes the environment with its keys, content, revisions and mappings (ON DELETE CASCADE),
 * refused while it holds content unless forced; cancels the scheduled changes of it or into it and
 * returns them.
 */
export function* deleteEnvironment(envId: string, force: boolean): Step<readonly ScheduleRow[]> {
  yield* requireEnv(envId);
  const n = yield* call('countContents', envId);
  if (n > 0 && !force) {
    throw new RcdError('conflict', `environment ${JSON.stringify(envId)} holds ${n} content item(s); delete them first or force`);
  }
  yield* call('deleteEnv', envId);
  return yield* cancelOfEnvironment(envId);
}

/** Stores the key's digest under a new key id; a key belongs to one environment. */
export function* createKey(envId: string, digest: string): Step<string> {
  yield* requireEnv(envId);
  const existing = yield* call('keyByDigest', digest);
  if (existing !== undefined) {
    throw new RcdError(
      'conflict',
      existing.env_id === envId ? 'this API key already exists in this environment' : 'this API key already belongs to another environment',
    );
  }
  const id = generateKeyId();
  yield* call('insertKey', id, envId, digest, nowIso());
  return id;
}

/** Revokes the key; revoking twice keeps the first revocation time. */
export function* revokeKey(envId: string, keyId: string): Step<void> {
  yield* requireEnv(envId);
  const row = yield* call('keyOf', envId, keyId);
  if (row === undefined) throw new RcdError('not_found', `key ${JSON.stringify(keyId)} does not exist in environment ${JSON.stringify(envId)}`);
  if (row.revoked_at === null) yield* call('revokeKey', keyId, nowIso());
}

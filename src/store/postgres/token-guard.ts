/**
 * The admin token check of a guarded write (src/store/write-guard.ts) on PostgreSQL, run inside the
 * write's transaction: the token's row is read FOR SHARE, so a revocation committed before is seen
 * and one made meanwhile (an UPDATE of that row) waits until this transaction ends.
 */
import { LIVE_TOKEN_SQL, requireLiveToken, type WriteGuard } from '../write-guard.js';
import type { Tx } from './connection.js';

export async function requireLiveTokenPg(tx: Tx, guard: WriteGuard): Promise<void> {
  const rows = await tx.unsafe<{ revoked_at: string | null }[]>(`${LIVE_TOKEN_SQL}$1 FOR SHARE`, [guard.tokenId], { prepare: true });
  requireLiveToken(rows[0]);
}

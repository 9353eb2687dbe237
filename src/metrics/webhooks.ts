/**
 * What the metrics read of webhook delivery. The outbox lives in the store (pending deliveries and
 * dead letters survive restarts and are shared by the nodes of one store), so the backlog is the
 * store's count, read at most once at a time; what this process delivered, dead-lettered or dropped
 * since it started comes from its dispatcher. The control thread copies both into the shared
 * counters once a second.
 */
import type { AdminServer } from '../admin/server/server.js';
import type { Store } from '../store/types.js';
import { S_WEBHOOK_BACKLOG, S_WEBHOOK_DELIVERED, S_WEBHOOK_DROPPED, S_WEBHOOK_FAILED, type ServerCounters } from './layout.js';

let counting = false;

/** Copies the dispatcher's figures now and starts a read of the outbox's backlog (skipped while one runs). */
export function sampleWebhooks(c: ServerCounters, admin: Pick<AdminServer, 'webhookStats'>, store: Pick<Store, 'outboxCounts'>): void {
  const s = admin.webhookStats();
  c[S_WEBHOOK_FAILED] = s.failed;
  c[S_WEBHOOK_DELIVERED] = s.delivered;
  c[S_WEBHOOK_DROPPED] = s.dropped;
  if (counting) return;
  counting = true;
  store.outboxCounts().then(
    (counts) => {
      c[S_WEBHOOK_BACKLOG] = counts.pending;
      counting = false;
    },
    () => {
      // The store is unreachable (reported by its own status): the last backlog figure stays.
      counting = false;
    },
  );
}

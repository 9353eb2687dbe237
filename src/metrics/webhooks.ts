/**
 * What the metrics read of webhook delivery, through one function: whatever delivers webhooks (today
 * an in-memory dispatcher) only has to say these four figures. The control thread copies them into
 * the shared counters once a second.
 */
import type { AdminServer } from '../admin/server/server.js';
import { S_WEBHOOK_BACKLOG, S_WEBHOOK_DELIVERED, S_WEBHOOK_DROPPED, S_WEBHOOK_FAILED, type ServerCounters } from './layout.js';

export interface WebhookFigures {
  /** Deliveries waiting: queued, between retries, or being sent. */
  readonly backlog: number;
  /** Given up for good since the start (retries exhausted, or a final refusal). */
  readonly failed: number;
  readonly delivered: number;
  /** Never attempted: the backlog was full. */
  readonly dropped: number;
}

export function webhookFigures(admin: Pick<AdminServer, 'webhookStats'>): WebhookFigures {
  const s = admin.webhookStats();
  return { backlog: s.queued + s.inFlight, failed: s.failed, delivered: s.delivered, dropped: s.dropped };
}

export function sampleWebhooks(c: ServerCounters, admin: Pick<AdminServer, 'webhookStats'>): void {
  const f = webhookFigures(admin);
  c[S_WEBHOOK_BACKLOG] = f.backlog;
  c[S_WEBHOOK_FAILED] = f.failed;
  c[S_WEBHOOK_DELIVERED] = f.delivered;
  c[S_WEBHOOK_DROPPED] = f.dropped;
}

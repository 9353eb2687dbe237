/**
 * The sampled access log (--access-log RATE), a delivery loop's side. One content request in
 * round(1 / RATE) is recorded: a countdown decremented per request, so no random number and no
 * branch taken for the others. A sampled request becomes one small object in an array (at most
 * --access-log-buffer of them; past that it is dropped and counted in rcd_access_log_dropped_total);
 * every ACCESS_REPORT_MS the array goes to the control thread with the feed, which formats and
 * writes the lines (src/control/access-writer.ts). Nothing here formats or writes.
 */
import { L_ACCESS_DROPPED, OUTCOME_NAMES, ROUTE_NAMES, type LoopCounters, type MetricRoute, type Outcome } from '../metrics/layout.js';
import type { AccessRecord } from '../control/protocol.js';
import type { DeliveryFeed } from '../control/feed.js';

/** How often a loop sends its sampled records (and how stale a line may be when written). */
export const ACCESS_REPORT_MS = 250;

export interface AccessSampler {
  /** Requests per record: round(1 / rate). */
  readonly period: number;
  /** Requests left before the next one is recorded. */
  countdown: number;
  records: AccessRecord[];
  readonly max: number;
}

/** null when the access log is off (rate 0): the request path then tests one null. */
export function newAccessSampler(rate: number, max: number): AccessSampler | null {
  if (rate <= 0) return null;
  const period = Math.max(1, Math.round(1 / rate));
  return { period, countdown: period, records: [], max };
}

/** Called for a sampled request (its countdown reached 0). */
export function recordAccess(
  s: AccessSampler,
  counters: LoopCounters,
  loop: number,
  route: MetricRoute,
  status: number,
  outcome: Outcome,
  bytes: number,
  durationMs: number,
  keyId: string,
): void {
  s.countdown = s.period;
  if (s.records.length >= s.max) {
    counters[L_ACCESS_DROPPED]! += 1;
    return;
  }
  s.records.push({ at: Date.now(), loop, route: ROUTE_NAMES[route], status, outcome: OUTCOME_NAMES[outcome], bytes, durationMs, keyId });
}

/** Sends what was sampled since the last report (timer, and once more when the loop stops). */
export function reportAccess(feed: DeliveryFeed, s: AccessSampler): void {
  if (s.records.length === 0) return;
  const records = s.records;
  s.records = [];
  feed.reportAccess(records);
}

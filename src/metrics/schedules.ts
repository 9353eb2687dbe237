/**
 * What the metrics keep of scheduled changes (the control thread's applier writes them into the
 * server's shared counters): how many are open in the store, how many this node applied or found
 * failed, and how late each applied one was visible on every live node.
 */
import type { ScheduleMetrics } from '../admin/server/scheduler.js';
import { S_SCHEDULE_APPLIED, S_SCHEDULE_FAILED, S_SCHEDULE_OPEN, observeScheduleLateness, type ServerCounters } from './layout.js';

export function scheduleMetrics(c: ServerCounters): ScheduleMetrics {
  return {
    applied(lateMs: number): void {
      c[S_SCHEDULE_APPLIED]! += 1;
      observeScheduleLateness(c, lateMs);
    },
    failed(): void {
      c[S_SCHEDULE_FAILED]! += 1;
    },
    open(count: number): void {
      c[S_SCHEDULE_OPEN] = count;
    },
  };
}

import type { StallEvent, StallStats } from '../../bench/harness/wrk.js';

type Late = [endedAt: number, lateMs: number, cpu: number];

/**
 * What the stall probes would report for these stalls (bench/harness/wrk.ts, StallStats): counts and events
 * from one list; with `lates`, every late wake-up as well (the probes' --lates-from list).
 */
export function stallStats(events: Late[], realtime = true, perCpu = true, lates?: Late[]): StallStats {
  return {
    ...(lates === undefined ? {} : { lates: listed(lates) }),
    realtime,
    perCpu,
    stalls: events.length,
    maxStallMs: Math.max(0, ...events.map((e) => e[1])),
    stalledMs: events.reduce((n, e) => n + e[1], 0),
    events: listed(events),
  };
}

function listed(lates: Late[]): StallEvent[] {
  return lates.map(([endedAt, lateMs, cpu]) => ({ endedAt, lateMs, cpu }));
}

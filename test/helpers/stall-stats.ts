import type { StallStats } from '../../bench/wrk.js';

/** What the stall probes would report for these stalls (bench/wrk.ts, StallStats): counts and events from one list. */
export function stallStats(events: [endedAt: number, lateMs: number, cpu: number][], realtime = true, perCpu = true): StallStats {
  return {
    realtime,
    perCpu,
    stalls: events.length,
    maxStallMs: Math.max(0, ...events.map((e) => e[1])),
    stalledMs: events.reduce((n, e) => n + e[1], 0),
    events: events.map(([endedAt, lateMs, cpu]) => ({ endedAt, lateMs, cpu })),
  };
}

/** The bounds a scheduled change is checked against when it is scheduled. */
export interface ScheduleLimits {
  /** How far ahead a change may be scheduled (ms). */
  readonly maxAheadMs: number;
  /** Schedules pending or paused in the whole store. */
  readonly maxOpen: number;
}

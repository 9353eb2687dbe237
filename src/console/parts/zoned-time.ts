/**
 * Wall-clock times in a named time zone (IANA, e.g. Europe/Berlin), with nothing but Intl: the
 * offset a zone has at an instant, the wall time an instant shows there, and the instants a wall
 * time names there: one, none (it falls in the gap when the clocks go forward) or two (it happens
 * twice when they go back). Pure functions, without the DOM (unit-tested in Node).
 */

export interface WallTime {
  readonly year: number;
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

/** What a wall time names in a zone. Offsets are minutes east of UTC. */
export type Resolved =
  | { readonly kind: 'one'; readonly ms: number; readonly offset: number }
  /** It does not exist: the clocks jump from `from` (wall time, old offset) to `to` (new offset) at `atMs`. */
  | { readonly kind: 'gap'; readonly atMs: number; readonly before: number; readonly after: number; readonly from: WallTime; readonly to: WallTime }
  /** It happens twice: first with `earlier.offset`, then again with `later.offset`. */
  | { readonly kind: 'two'; readonly earlier: { readonly ms: number; readonly offset: number }; readonly later: { readonly ms: number; readonly offset: number } };

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const formats = new Map<string, Intl.DateTimeFormat>();

function formatOf(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(zone, f);
  }
  return f;
}

/** True when `zone` is a time zone this browser knows. */
export function isZone(zone: string): boolean {
  try {
    formatOf(zone);
    return true;
  } catch {
    return false;
  }
}

/** Unix ms of a wall time read as UTC (years as written, 0-99 included). */
export function utcOf(w: WallTime): number {
  const d = new Date(0);
  d.setUTCFullYear(w.year, w.month - 1, w.day);
  d.setUTCHours(w.hour, w.minute, w.second, 0);
  return d.getTime();
}

/** The wall time `ms` shows in `zone` (to the second). */
export function wallTimeAt(zone: string, ms: number): WallTime {
  const parts: Record<string, number> = {};
  for (const p of formatOf(zone).formatToParts(new Date(ms))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

/** The zone's offset from UTC at `ms`, in minutes east (Europe/Berlin in winter: 60). */
export function offsetAt(zone: string, ms: number): number {
  const whole = Math.floor(ms / 1000) * 1000;
  return Math.round((utcOf(wallTimeAt(zone, whole)) - whole) / MINUTE);
}

/** An offset as "UTC+01:00", "UTC-03:30", "UTC+00:00". */
export function offsetLabel(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `UTC${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** The value of a `datetime-local` input ("2027-03-28T02:30" or with seconds), or null. */
export function parseWallTime(value: string): WallTime | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(value);
  if (m === null) return null;
  const w = { year: Number(m[1]), month: Number(m[2]), day: Number(m[3]), hour: Number(m[4]), minute: Number(m[5]), second: Number(m[6] ?? 0) };
  if (w.month < 1 || w.month > 12 || w.day < 1 || w.hour > 23 || w.minute > 59 || w.second > 59) return null;
  // 31 June rolls over to 1 July: a date that does not round-trip does not exist.
  return new Date(utcOf(w)).getUTCDate() === w.day ? w : null;
}

/**
 * The instants `wall` names in `zone`. Every offset the zone has within a day either side is tried;
 * an instant counts when the zone has that very offset at it. None: a gap, whose edges are found by
 * halving to the minute.
 */
export function resolveWallTime(zone: string, wall: WallTime): Resolved {
  const guess = utcOf(wall);
  const offsets = new Set<number>();
  for (let h = -30; h <= 30; h += 6) offsets.add(offsetAt(zone, guess + h * HOUR));
  const found: { ms: number; offset: number }[] = [];
  for (const offset of offsets) {
    const ms = guess - offset * MINUTE;
    if (offsetAt(zone, ms) === offset) found.push({ ms, offset });
  }
  found.sort((a, b) => a.ms - b.ms);
  if (found.length === 1) return { kind: 'one', ms: found[0]!.ms, offset: found[0]!.offset };
  if (found.length >= 2) return { kind: 'two', earlier: found[0]!, later: found[found.length - 1]! };
  const before = offsetAt(zone, guess - 30 * HOUR);
  const after = offsetAt(zone, guess + 30 * HOUR);
  // The jump lies between the wall time read with the new offset and read with the old one.
  let lo = guess - after * MINUTE;
  let hi = guess - before * MINUTE;
  while (hi - lo > MINUTE) {
    const mid = Math.floor((lo + hi) / 2 / MINUTE) * MINUTE;
    if (offsetAt(zone, mid) === before) lo = mid;
    else hi = mid;
  }
  return { kind: 'gap', atMs: hi, before, after, from: wallTimeAt('UTC', hi + before * MINUTE), to: wallTimeAt(zone, hi) };
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/** "02:30 on 28 March 2027" (seconds only when not zero). */
export function wallText(w: WallTime): string {
  const hm = `${String(w.hour).padStart(2, '0')}:${String(w.minute).padStart(2, '0')}${w.second === 0 ? '' : `:${String(w.second).padStart(2, '0')}`}`;
  return `${hm} on ${w.day} ${MONTHS[w.month - 1]} ${w.year}`;
}

/** "28 March 2027". */
export function dateText(w: WallTime): string {
  return `${w.day} ${MONTHS[w.month - 1]} ${w.year}`;
}

/** The sentence that refuses a wall time in a gap, naming the zone and the jump. */
export function gapText(zone: string, wall: WallTime, gap: Extract<Resolved, { kind: 'gap' }>): string {
  const clock = (w: WallTime): string => `${String(w.hour).padStart(2, '0')}:${String(w.minute).padStart(2, '0')}`;
  return `${wallText(wall)} does not exist in ${zone}: the clocks go from ${clock(gap.from)} (${offsetLabel(gap.before)}) straight to ${clock(gap.to)} (${offsetLabel(gap.after)}). Choose another time.`;
}

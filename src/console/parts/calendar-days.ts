/**
 * The days a calendar shows, in a named zone: where each begins and ends as instants (a day in a
 * zone is 23, 24 or 25 hours long), the week a date falls in (Monday first), and which day and
 * hour of them an instant falls on. Pure functions, without the DOM (unit-tested in Node).
 */
import { resolveWallTime, utcOf, wallTimeAt, type WallTime } from './zoned-time.js';

export interface CalendarDay {
  /** "2027-03-28" */
  readonly date: string;
  readonly startMs: number;
  readonly endMs: number;
}

const DAY_MS = 86_400_000;

function wallOfDate(date: string): WallTime {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return { year, month, day, hour: 0, minute: 0, second: 0 };
}

/** The date `days` after `date` ("2027-03-28" + 1 = "2027-03-29"). */
export function addDays(date: string, days: number): string {
  return new Date(utcOf(wallOfDate(date)) + days * DAY_MS).toISOString().slice(0, 10);
}

/** The date `ms` falls on in `zone`. */
export function dateAt(zone: string, ms: number): string {
  const w = wallTimeAt(zone, ms);
  return `${String(w.year).padStart(4, '0')}-${String(w.month).padStart(2, '0')}-${String(w.day).padStart(2, '0')}`;
}

/** The first instant of `date` in `zone`: its midnight, or the end of a gap that swallowed midnight. */
export function startOfDay(zone: string, date: string): number {
  const r = resolveWallTime(zone, wallOfDate(date));
  if (r.kind === 'one') return r.ms;
  if (r.kind === 'two') return r.earlier.ms;
  return r.atMs;
}

export function dayOf(zone: string, date: string): CalendarDay {
  return { date, startMs: startOfDay(zone, date), endMs: startOfDay(zone, addDays(date, 1)) };
}

/** The Monday of the week `date` falls in. */
export function mondayOf(date: string): string {
  const weekday = new Date(utcOf(wallOfDate(date))).getUTCDay();
  return addDays(date, -((weekday + 6) % 7));
}

/** The days a view shows: the one day, or Monday to Sunday of its week. */
export function daysOf(zone: string, date: string, view: 'day' | 'week'): CalendarDay[] {
  if (view === 'day') return [dayOf(zone, date)];
  const monday = mondayOf(date);
  return Array.from({ length: 7 }, (_, i) => dayOf(zone, addDays(monday, i)));
}

/** The wall hour (0-23) `ms` shows in `zone`. */
export function hourAt(zone: string, ms: number): number {
  return wallTimeAt(zone, ms).hour;
}

/** "14:05" in `zone`. */
export function clockAt(zone: string, ms: number): string {
  const w = wallTimeAt(zone, ms);
  return `${String(w.hour).padStart(2, '0')}:${String(w.minute).padStart(2, '0')}`;
}

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/** "Mon 29 Mar". */
export function dayLabel(date: string): string {
  const d = new Date(utcOf(wallOfDate(date)));
  const month = d.toLocaleString('en-GB', { month: 'short', timeZone: 'UTC' });
  return `${WEEKDAYS[d.getUTCDay()]} ${d.getUTCDate()} ${month}`;
}

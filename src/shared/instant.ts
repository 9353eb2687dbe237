/**
 * Instants as the admin API and the CLI take them: RFC 3339 date-times with an offset
 * (`2026-10-31T00:00:00Z`, `2026-10-31T02:00:00+02:00`, fractions of a second allowed). A time
 * without an offset is refused: whose midnight it meant cannot be guessed, and live-ops calendars
 * span time zones. Every year 0000-9999 is read as written (RFC 3339's proleptic Gregorian
 * calendar): a schedule's time in the past is refused as such, never taken for another century.
 */
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Unix ms of an RFC 3339 date-time with offset, or null when `text` is not one (or names no real moment, e.g. 31 June). */
export function parseInstant(text: string): number | null {
  const m = RFC3339.exec(text);
  if (m === null) return null;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const local = utcMs(year, month, day, hour, minute, second);
  // 31 June rolls over to 1 July: a date that does not round-trip does not exist.
  if (new Date(local).getUTCDate() !== day) return null;
  const fraction = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const zone = m[8] as string;
  let offsetMin = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMin = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  return local + fraction - offsetMin * 60_000;
}

/**
 * Date.UTC with the year as given: Date.UTC (and Date's constructor) read years 0-99 as 1900-1999,
 * setUTCFullYear does not.
 */
function utcMs(year: number, month: number, day: number, hour: number, minute: number, second: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day);
  d.setUTCHours(hour, minute, second, 0);
  return d.getTime();
}

export function isoOf(ms: number): string {
  return new Date(ms).toISOString();
}

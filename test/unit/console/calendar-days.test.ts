/** The days of the console's calendar in a zone (src/console/parts/calendar-days.ts), a DST day included. */
import { describe, expect, it } from 'vitest';
import { addDays, clockAt, dayLabel, daysOf, mondayOf } from '../../../src/console/parts/calendar-days.js';

describe('calendar days', () => {
  it('a week runs Monday to Sunday, and a DST day is 23 hours long in its zone', () => {
    expect(mondayOf('2027-03-28')).toBe('2027-03-22');
    expect(mondayOf('2027-03-22')).toBe('2027-03-22');
    expect(addDays('2027-02-28', 1)).toBe('2027-03-01');
    const week = daysOf('Europe/Berlin', '2027-03-28', 'week');
    expect(week.map((d) => d.date)).toEqual(['2027-03-22', '2027-03-23', '2027-03-24', '2027-03-25', '2027-03-26', '2027-03-27', '2027-03-28']);
    const sunday = week[6]!;
    expect(sunday.startMs).toBe(Date.parse('2027-03-27T23:00:00Z'));
    expect(sunday.endMs - sunday.startMs).toBe(23 * 3_600_000);
    expect(daysOf('UTC', '2027-10-31', 'day')).toEqual([{ date: '2027-10-31', startMs: Date.parse('2027-10-31T00:00:00Z'), endMs: Date.parse('2027-11-01T00:00:00Z') }]);
    expect(dayLabel('2027-03-28')).toBe('Sun 28 Mar');
    expect(clockAt('Europe/Berlin', Date.parse('2027-10-31T01:30:00Z'))).toBe('02:30');
  });
});

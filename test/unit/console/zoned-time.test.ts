/**
 * Wall times in a named zone (src/console/parts/zoned-time.ts): the offset at an instant, a time in
 * the gap when the clocks go forward refused with the jump named, a time in the overlap when they
 * go back answered with both instants, and zones whose offsets are not whole hours.
 */
import { describe, expect, it } from 'vitest';
import { dateText, gapText, isZone, offsetAt, offsetLabel, parseWallTime, resolveWallTime, wallText, wallTimeAt, type WallTime } from '../../../src/console/parts/zoned-time.js';

const BERLIN = 'Europe/Berlin';

function wall(value: string): WallTime {
  const w = parseWallTime(value);
  if (w === null) throw new Error(`not a wall time: ${value}`);
  return w;
}

describe('offsetAt and offsetLabel', () => {
  it('gives the zone\'s offset at that instant, not today\'s', () => {
    expect(offsetAt(BERLIN, Date.parse('2027-01-15T12:00:00Z'))).toBe(60);
    expect(offsetAt(BERLIN, Date.parse('2027-07-15T12:00:00Z'))).toBe(120);
    expect(offsetAt('UTC', Date.parse('2027-07-15T12:00:00Z'))).toBe(0);
    expect(offsetAt('Asia/Kolkata', Date.parse('2027-07-15T12:00:00Z'))).toBe(330);
    expect(offsetAt('America/St_Johns', Date.parse('2027-01-15T12:00:00Z'))).toBe(-210);
  });
  it('labels offsets with sign, hours and minutes', () => {
    expect(offsetLabel(60)).toBe('UTC+01:00');
    expect(offsetLabel(0)).toBe('UTC+00:00');
    expect(offsetLabel(330)).toBe('UTC+05:30');
    expect(offsetLabel(-210)).toBe('UTC-03:30');
  });
  it('reads an instant as the wall time of the zone', () => {
    expect(wallTimeAt(BERLIN, Date.parse('2027-10-31T00:30:00Z'))).toEqual({ year: 2027, month: 10, day: 31, hour: 2, minute: 30, second: 0 });
    expect(wallTimeAt(BERLIN, Date.parse('2027-10-31T01:30:00Z'))).toEqual({ year: 2027, month: 10, day: 31, hour: 2, minute: 30, second: 0 });
  });
});

describe('parseWallTime', () => {
  it('takes a datetime-local value, with or without seconds', () => {
    expect(wall('2027-03-28T02:30')).toEqual({ year: 2027, month: 3, day: 28, hour: 2, minute: 30, second: 0 });
    expect(wall('2027-03-28T02:30:15').second).toBe(15);
  });
  it('refuses what names no time', () => {
    for (const bad of ['', '2027-03-28', '2027-03-28T24:00', '2027-06-31T10:00', '2027-13-01T00:00', '2027-03-28T02:30Z']) expect(parseWallTime(bad)).toBeNull();
  });
});

describe('resolveWallTime', () => {
  it('names one instant for an ordinary time', () => {
    expect(resolveWallTime(BERLIN, wall('2027-06-01T12:00'))).toEqual({ kind: 'one', ms: Date.parse('2027-06-01T10:00:00Z'), offset: 120 });
    expect(resolveWallTime('UTC', wall('2027-03-28T02:30'))).toEqual({ kind: 'one', ms: Date.parse('2027-03-28T02:30:00Z'), offset: 0 });
    // Either side of the gap.
    expect(resolveWallTime(BERLIN, wall('2027-03-28T01:59'))).toMatchObject({ kind: 'one', offset: 60 });
    expect(resolveWallTime(BERLIN, wall('2027-03-28T03:00'))).toMatchObject({ kind: 'one', ms: Date.parse('2027-03-28T01:00:00Z'), offset: 120 });
  });

  it('finds the gap of 28 March 2027 in Europe/Berlin and says where the clocks jump', () => {
    const w = wall('2027-03-28T02:30');
    const r = resolveWallTime(BERLIN, w);
    expect(r.kind).toBe('gap');
    if (r.kind !== 'gap') return;
    expect(r.atMs).toBe(Date.parse('2027-03-28T01:00:00Z'));
    expect([r.before, r.after]).toEqual([60, 120]);
    expect(gapText(BERLIN, w, r)).toBe(
      '02:30 on 28 March 2027 does not exist in Europe/Berlin: the clocks go from 02:00 (UTC+01:00) straight to 03:00 (UTC+02:00). Choose another time.',
    );
  });

  it('finds both 02:30s of 31 October 2027 in Europe/Berlin, the summer one first', () => {
    const r = resolveWallTime(BERLIN, wall('2027-10-31T02:30'));
    expect(r).toEqual({
      kind: 'two',
      earlier: { ms: Date.parse('2027-10-31T00:30:00Z'), offset: 120 },
      later: { ms: Date.parse('2027-10-31T01:30:00Z'), offset: 60 },
    });
  });

  it('handles zones with half-hour shifts and offsets west of UTC', () => {
    // Lord Howe Island goes back by 30 minutes at 02:00 on the first Sunday of April.
    expect(resolveWallTime('Australia/Lord_Howe', wall('2027-04-04T01:45'))).toMatchObject({ kind: 'two', earlier: { offset: 660 }, later: { offset: 630 } });
    // New York springs forward at 02:00 on 14 March 2027.
    const ny = resolveWallTime('America/New_York', wall('2027-03-14T02:15'));
    expect(ny).toMatchObject({ kind: 'gap', before: -300, after: -240, atMs: Date.parse('2027-03-14T07:00:00Z') });
  });
});

describe('words', () => {
  it('says a wall time and a date in words', () => {
    expect(wallText(wall('2027-10-31T02:30'))).toBe('02:30 on 31 October 2027');
    expect(wallText(wall('2027-10-31T02:30:05'))).toBe('02:30:05 on 31 October 2027');
    expect(dateText(wall('2027-01-01T00:00'))).toBe('1 January 2027');
  });
  it('knows the zones Intl knows', () => {
    expect(isZone(BERLIN)).toBe(true);
    expect(isZone('Mars/Olympus')).toBe(false);
  });
});

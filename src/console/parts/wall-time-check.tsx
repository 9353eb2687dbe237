/**
 * A `datetime-local` value read in a named zone (zoned-time.ts): the instant it names, the zone's
 * offset at that date, and what the time input says under itself: a time in the gap when the
 * clocks go forward is refused, naming the zone and the jump; a time that happens twice when they
 * go back asks which of the two, by offset. The choice is kept in the value itself as an RFC 3339
 * offset after the wall time ("2027-10-31T02:30+01:00"), so whoever holds the value holds it.
 */
import { gapText, offsetLabel, offsetAt, parseWallTime, resolveWallTime, wallText, type Resolved } from './zoned-time.js';

/** This browser's zone. */
export const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The wall time part of a value and the offset chosen for it (minutes east), if one was. */
export function splitValue(value: string): { wall: string; offset: number | null } {
  const m = /^(.*)([+-])(\d{2}):(\d{2})$/.exec(value);
  if (m === null) return { wall: value, offset: null };
  return { wall: m[1]!, offset: (m[2] === '-' ? -1 : 1) * (Number(m[3]) * 60 + Number(m[4])) };
}

function resolved(value: string, zone: string): Resolved | null {
  const wall = parseWallTime(splitValue(value).wall);
  return wall === null ? null : resolveWallTime(zone, wall);
}

/** The instant (ISO, UTC) a value names in `zone`; null when it names none, or two and no choice was made. */
export function instantIn(value: string, zone: string): string | null {
  const r = resolved(value, zone);
  if (r === null || r.kind === 'gap') return null;
  if (r.kind === 'one') return new Date(r.ms).toISOString();
  const chosen = splitValue(value).offset;
  const pick = [r.earlier, r.later].find((c) => c.offset === chosen);
  return pick === undefined ? null : new Date(pick.ms).toISOString();
}

/** Why a value names no single instant in `zone` (a sentence naming the zone), or null when it does or is empty. */
export function timeProblem(value: string, zone: string): string | null {
  const wall = parseWallTime(splitValue(value).wall);
  if (wall === null) return null;
  const r = resolveWallTime(zone, wall);
  if (r.kind === 'gap') return gapText(zone, wall, r);
  if (r.kind === 'two' && instantIn(value, zone) === null) {
    return `${wallText(wall)} happens twice in ${zone} (the clocks go back): choose the first (${offsetLabel(r.earlier.offset)}) or the second (${offsetLabel(r.later.offset)}).`;
  }
  return null;
}

/** The zone's offset at the chosen date and time (not today's): "UTC+02:00", or both when the time happens twice. */
export function offsetTextAt(value: string, zone: string, nowMs: number): string {
  const r = resolved(value, zone);
  if (r === null) return offsetLabel(offsetAt(zone, nowMs));
  if (r.kind === 'one') return offsetLabel(r.offset);
  if (r.kind === 'gap') return `${offsetLabel(r.before)} to ${offsetLabel(r.after)}`;
  const chosen = splitValue(value).offset;
  return chosen === null ? `${offsetLabel(r.earlier.offset)} or ${offsetLabel(r.later.offset)}` : offsetLabel(chosen);
}

/** Under a time input: the refusal of a time in a gap, or the question which of two. */
export function WallTimeCheck({ label, value, zone, onValue }: { label: string; value: string; zone: string; onValue: (v: string) => void }): preact.JSX.Element | null {
  const { wall: wallValue, offset: chosen } = splitValue(value);
  const wall = parseWallTime(wallValue);
  if (wall === null) return null;
  const r = resolveWallTime(zone, wall);
  if (r.kind === 'gap') {
    return (
      <p role="alert" class="error">
        {gapText(zone, wall, r)}
      </p>
    );
  }
  if (r.kind === 'one') return null;
  const options = [
    { name: 'first', c: r.earlier },
    { name: 'second', c: r.later },
  ];
  return (
    <fieldset class="overlap">
      <legend>
        {wallText(wall)} happens twice in {zone} (the clocks go back). Which {label.toLowerCase()}?
      </legend>
      {options.map(({ name, c }) => (
        <label key={name}>
          <input type="radio" name={`overlap-${label}`} checked={chosen === c.offset} onChange={() => onValue(`${wallValue}${offsetLabel(c.offset).slice(3)}`)} />
          The {name}: {offsetLabel(c.offset)} ({new Date(c.ms).toISOString().slice(11, 16)} UTC)
        </label>
      ))}
    </fieldset>
  );
}

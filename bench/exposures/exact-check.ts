/**
 * Whether an assignment table is exact for the players sent: the split they must show (each
 * player's variant from XXH32(u) % 1000, launch-fixture.ts) against the rows, the per-hour counts
 * against the rows, and no player moved. The launch and the fleet judge their table with it.
 */
import type { TargetCheck } from '../load/targets.js';
import { LAUNCH_EXPERIMENTS, addPlayer, emptySplit, rowsPerExperiment, splitDifferences, type Split } from './launch-fixture.js';
import { playerName } from './players-script.js';

export function fmtCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** The split `players` must show: wrk's players PREFIX0..PREFIX(count-1), then `extra`. */
export function expectedSplit(prefix: string, count: number, extra: readonly string[]): Split {
  const split = emptySplit();
  for (let i = 0; i < count; i++) addPlayer(split, playerName(prefix, i));
  for (const u of extra) addPlayer(split, u);
  return split;
}

/**
 * The exactness verdict of a table against the players sent: rows per experiment, the split, the
 * per-hour counts, moved players. `problems` also takes what the caller found wrong before.
 */
export function exactCheck(what: string, got: Split, counted: Split, moved: number, want: Split, problems: string[]): TargetCheck {
  const rows = rowsPerExperiment(got);
  problems.push(...splitDifferences(got, want).slice(0, 5));
  const countedOff = splitDifferences(counted, got);
  if (countedOff.length > 0) problems.push(`per-hour counts differ from the rows: ${countedOff.slice(0, 3).join('; ')}`);
  if (moved > 0) problems.push(`${moved} players moved`);
  const players = rowsPerExperiment(want)[0]!;
  return {
    what,
    measured: `${rows.map(fmtCount).join(' / ')} rows (${LAUNCH_EXPERIMENTS.length} experiments) of ${fmtCount(players)} players; ${problems.length === 0 ? 'split exact, per-hour counts agree' : problems.join('; ')}`,
    verdict: problems.length === 0 ? 'pass' : 'FAIL',
  };
}

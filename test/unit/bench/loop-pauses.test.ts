// bench:edits' reading of the loop-delay log (bench/edits/loop-pauses.ts): which cause each pause over the
// limit is put down to decides the "no pause caused by a write" verdict, so a pause the host caused
// must be told apart from one the guest's threads caused only when a pinned probe saw that CPU stop.
import { describe, expect, it } from 'vitest';
import { loopDelayIn, parseLoopDelayLine, type LoopDelayLine } from '../../../bench/edits/loop-pauses.js';
import { stallStats } from '../../helpers/stall-stats.js';

const T = 1_795_000_000_000;

/** A line read at bench time `at` whose longest pause (all of `max`) ended at wall time `endedAt`. */
function line(at: number, max: number, split: { ran: number; queued: number; off: number }, endedAt: number, cpu: number | null = null): LoopDelayLine {
  const text =
    `rcd: loop delay p50=0.05ms p99=0.40ms max=${max.toFixed(2)}ms apply=0.20ms/3 gc=1.10ms/7 wait=40.00ms ` +
    `longest=${(split.ran + split.queued + split.off).toFixed(2)}ms ran=${split.ran.toFixed(2)}ms queued=${split.queued.toFixed(2)}ms off=${split.off.toFixed(2)}ms at=${endedAt.toFixed(1)}` +
    (cpu === null ? '' : ` cpu=${cpu}`);
  const parsed = parseLoopDelayLine(text, at);
  expect(parsed, text).not.toBeNull();
  return parsed!;
}

describe('bench:edits: what paused the delivery loop', () => {
  it('reads every field of a line, the pause moment and gc=n/a included, and older lines without them', () => {
    const full = parseLoopDelayLine('rcd: loop delay p50=0.05ms p99=0.40ms max=24.20ms apply=0.60ms/12 gc=4.30ms/9 wait=12.50ms longest=24.90ms ran=0.40ms queued=24.10ms off=0.40ms at=1795000000123.4 cpu=1 answered=37', 5);
    expect(full).toEqual({ at: 5, p99: 0.4, max: 24.2, applyMax: 0.6, applies: 12, gcMax: 4.3, wait: 12.5, split: { longest: 24.9, ran: 0.4, queued: 24.1, off: 0.4, endedAt: 1795000000123.4, cpu: 1, answered: 37 } });
    const noGc = parseLoopDelayLine('rcd: loop delay p50=0.05ms p99=0.40ms max=2.00ms apply=0.00ms/0 gc=n/a wait=1.00ms longest=2.50ms ran=1.00ms queued=1.00ms off=0.50ms at=1795000000001.0', 1);
    expect(noGc?.gcMax).toBe(0);
    expect(noGc?.split?.endedAt).toBe(1795000000001);
    expect(noGc?.split?.cpu).toBeNull();
    expect(noGc?.split?.answered).toBeNull();
    const older = parseLoopDelayLine('rcd: loop delay p50=0.05ms p99=0.40ms max=2.00ms apply=0.00ms/0 gc=0.50ms/1 wait=1.00ms longest=2.50ms ran=1.00ms queued=1.00ms off=0.50ms', 1);
    expect(older?.split?.endedAt).toBeNull();
    expect(parseLoopDelayLine('rcd: listening on http://127.0.0.1:1', 1)).toBeNull();
  });

  it('puts a queued pause down to the host when a CPU stalled over it, and to the guest otherwise', () => {
    // A 24 ms pause, nearly all of it queued, ending at T; 20 quiet intervals around it.
    const lines = Array.from({ length: 20 }, (_, i) => (i === 10 ? line(11_000, 24.2, { ran: 0.4, queued: 24.1, off: 0.4 }, T) : line(1000 * (i + 1), 3, { ran: 1, queued: 1.5, off: 0.5 }, T - 5000 + i)));
    // The probe pinned to CPU 1 woke 23 ms late, just as the loop ran again: the host stopped that CPU.
    const covered = loopDelayIn(lines, 1000, stallStats([[T - 0.3, 23, 1]]), 0, 21_000);
    expect(covered.intervalsOverLimit).toBe(1);
    expect(covered.overLimitByHost).toBe(1);
    expect(covered.overLimitByWait).toBe(0);
    // The interval is kept with the cause it was given and the stall beside it, for a reader to check.
    expect(covered.overLimit).toEqual([
      { cause: 'host', maxMs: 24.2, gcMaxMs: 1.1, applyMaxMs: 0.2, longestMs: 24.9, ranMs: 0.4, queuedMs: 24.1, offMs: 0.4, endedAt: T, answered: null, hostMs: 0, hostAnyCpuMs: 23, nearestStallMs: 23, nearestStallCpu: 1 },
    ]);
    // A stall elsewhere in time, or one far shorter than the pause, explains nothing: the loop waited
    // behind another thread of the guest.
    for (const events of [[[T - 2000, 30, 0]], [[T - 1, 6, 0]]] as [number, number, number][][]) {
      const guest = loopDelayIn(lines, 1000, stallStats(events), 0, 21_000);
      expect(guest.overLimitByHost).toBe(0);
      expect(guest.overLimitByWait).toBe(1);
      expect(guest.overLimit?.map((p) => p.cause)).toEqual(['queued']);
    }
    // Probes that are not real-time (the guest can delay them too) or not one per CPU cannot tell.
    for (const stalls of [stallStats([[T - 0.3, 23, 1]], false, true), stallStats([[T - 0.3, 23, 1]], true, false)]) {
      const blind = loopDelayIn(lines, 1000, stalls, 0, 21_000);
      expect(blind.overLimitByHost).toBeNull();
      expect(blind.overLimitByWait).toBe(1);
    }
  });

  it('puts a pause the loop spent "running" down to the host only when the CPU it was on stalled over it', () => {
    // The kernel counted 14 ms of running; CPU 0's probe was 13 ms late over the same span. A host
    // pause the hypervisor does not report as steal reads so (seen: both CPUs stopped together).
    const onCpu = (cpu: number | null, max = 15): LoopDelayLine[] => [line(1000, 3, { ran: 1, queued: 1, off: 1 }, T - 1000, 0), line(2000, max, { ran: 14, queued: 0.5, off: 0.5 }, T, cpu)];
    const stopped = loopDelayIn(onCpu(0), 1000, stallStats([[T - 0.5, 13, 0]]), 0, 2500);
    expect(stopped.overLimitByHost).toBe(1);
    expect(stopped.overLimitOwnWork).toBe(0);
    // The loop was on CPU 1, which ran: the stall of CPU 0 did not stop it, the loop's own work did.
    const elsewhere = loopDelayIn(onCpu(1), 1000, stallStats([[T - 0.5, 13, 0]]), 0, 2500);
    expect(elsewhere.overLimitByHost).toBe(0);
    expect(elsewhere.overLimitOwnWork).toBe(1);
    // An older server's line does not name the CPU: a running loop is never excused then.
    expect(loopDelayIn(onCpu(null), 1000, stallStats([[T - 0.5, 13, 0]]), 0, 2500).overLimitOwnWork).toBe(1);
    // Nor when the split is another gap than the histogram's longest pause (40 ms against 15).
    const other = loopDelayIn(onCpu(0, 40), 1000, stallStats([[T - 0.5, 13, 0]]), 0, 2500);
    expect(other.overLimitByHost).toBe(0);
    expect(other.overLimitOwnWork).toBe(1);
  });

  it('adds up short stops of the CPU over a pause: what is left of it is what the guest can have taken', () => {
    // 14.8 ms, 11.3 of it "running" on CPU 1; no stall of 5 ms or more, but CPU 1's probe woke late by
    // 2.5 ms twice within the pause (a host taking the CPU in slices): the guest took 9.8 ms at most.
    const lines = [line(1000, 3, { ran: 1, queued: 1, off: 1 }, T - 1000, 1), line(2000, 14.8, { ran: 11.3, queued: 3, off: 0.5 }, T, 1)];
    const sliced = loopDelayIn(lines, 1000, stallStats([], true, true, [[T - 2, 2.5, 1], [T - 7, 2.5, 1], [T - 3000, 40, 1]]), 0, 2500);
    expect(sliced.overLimitByHost).toBe(1);
    expect(sliced.overLimit?.map((p) => [p.cause, p.hostMs, p.hostAnyCpuMs])).toEqual([['host', 5, 5]]);
    // One such stop leaves 12.3 ms to the guest; the same stops on the other CPU did not stop a running loop.
    for (const lates of [[[T - 2, 2.5, 1]], [[T - 2, 2.5, 0], [T - 7, 2.5, 0]]] as [number, number, number][][]) {
      const own = loopDelayIn(lines, 1000, stallStats([], true, true, lates), 0, 2500);
      expect(own.overLimitByHost).toBe(0);
      expect(own.overLimitOwnWork).toBe(1);
    }
    // Without the probes' list of late wake-ups (older results), their stalls alone are added up.
    expect(loopDelayIn(lines, 1000, stallStats([[T - 1, 5, 1]]), 0, 2500).overLimitByHost).toBe(1);
    expect(loopDelayIn(lines, 1000, stallStats([[T - 1, 4.5, 1]]), 0, 2500).overLimitByHost).toBe(0);
  });
});

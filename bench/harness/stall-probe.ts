/**
 * Machine-stall probe, run beside each wrk round (bench/harness/wrk.ts).
 *
 * Why: on a shared VM the host sometimes stops the whole guest for tens of milliseconds (seen here:
 * 30-70 ms gaps a few times a minute, on an idle guest too). Every request in flight then waits, in
 * the ceiling as much as in the server, and one such window can move a p99. The probe makes that
 * visible next to the figures it spoils, so a reader can tell "the server stalled" from "the machine
 * did".
 *
 * How: sleep 1 ms at a time and count every wake-up that came late by at least a threshold (5 ms: the p99 target's size). Atomics.wait
 * is a futex wait on this thread, so no event loop or timer list sits between the kernel and the
 * measurement. bench/harness/wrk.ts starts it with real-time priority (`chrt -f 1`) where allowed: then no
 * process in the guest can delay it, and a late wake-up means the guest itself was not running. At
 * normal priority (no permission) it also counts ordinary CPU contention, and says so.
 *
 * One probe sees the stalls of the CPU it happens to run on. A guest's CPUs are threads of the host,
 * each stopped and started on its own: a delivery loop woken onto a CPU the host is not running waits
 * as long as that CPU does, while a probe on the other CPU wakes on time. bench/harness/wrk.ts therefore runs
 * one probe pinned to each CPU where it can, and each stall is reported with the moment it ended,
 * so that a pause of the loop can be laid beside the stalls of the same moment (bench/edits/edits.ts).
 *
 * Usage: `node stall-probe.js SECONDS THRESHOLD_MS [--await-go] [--lates-from MS]` (SIGINT ends it
 * early; with --await-go it prints `ready` and starts on SIGUSR2). Prints one JSON line: stalls
 * (wake-ups late by THRESHOLD_MS or more), maxStallMs, stalledMs (their sum) and events: [endedAt,
 * lateMs] of each stall (endedAt in ms since the epoch, performance.timeOrigin's clock; the first
 * MAX_EVENTS only). With --lates-from, also lates: every wake-up late by MS or more in the same form,
 * the stalls among them. A host that takes a CPU away in short slices (a few 1-4 ms stops within a
 * pause) passes under the stall threshold one stop at a time; bench:edits adds those stops up over
 * a pause of the loop (bench/edits/loop-pauses.ts). bench/harness/wrk.ts reads it (StallStats).
 */

/** Wake-ups checked between two turns of the event loop: a turn lets a SIGINT in. */
const SLICE_MS = 100;
/** Stalls listed with their time; beyond this many only the counts go on (a few a minute is usual). */
const MAX_EVENTS = 10_000;
/** Late wake-ups listed with --lates-from: 1 ms ones come 2-3 a second on each CPU of this VM under load. */
const MAX_LATES = 50_000;

let stopped = false;
// SIGINT ends the probe early with what it saw so far: a caller whose load lasts "until something
// answered" runs one probe for all of it instead of one per second (each start of node at real-time
// priority took a core from the measured server for tens of ms).
process.once('SIGINT', () => (stopped = true));

interface Seen {
  stalls: number;
  maxStallMs: number;
  stalledMs: number;
  events: [endedAt: number, lateMs: number][];
  lates?: [endedAt: number, lateMs: number][];
}

async function probe(durationMs: number, thresholdMs: number, latesFromMs: number | null): Promise<Seen> {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  let prev = performance.now();
  const end = prev + durationMs;
  let stalls = 0;
  let maxStallMs = 0;
  let stalledMs = 0;
  const events: Seen['events'] = [];
  const lates: Seen['events'] = [];
  while (prev < end && !stopped) {
    const sliceEnd = Math.min(end, prev + SLICE_MS);
    while (prev < sliceEnd) {
      Atomics.wait(cell, 0, 0, 1);
      const now = performance.now();
      const late = now - prev - 1;
      if (latesFromMs !== null && late >= latesFromMs && lates.length < MAX_LATES) lates.push(lateWakeUp(now, late));
      if (late >= thresholdMs) {
        stalls++;
        stalledMs += late;
        if (late > maxStallMs) maxStallMs = late;
        if (events.length < MAX_EVENTS) events.push(lateWakeUp(now, late));
      }
      prev = now;
    }
    // The turn's own time falls into the next wake-up's lateness, so nothing goes unseen.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return latesFromMs === null ? { stalls, maxStallMs, stalledMs, events } : { stalls, maxStallMs, stalledMs, events, lates };
}

/** [endedAt, lateMs] of a wake-up at performance.now() `now`, late by `late` ms, to 0.1 ms. */
function lateWakeUp(now: number, late: number): [endedAt: number, lateMs: number] {
  return [Math.round((performance.timeOrigin + now) * 10) / 10, Math.round(late * 10) / 10];
}

const seconds = Number(process.argv[2]);
const thresholdMs = Number(process.argv[3]);
const flags = process.argv.slice(4);
const awaitGo = flags.includes('--await-go');
const latesAt = flags.indexOf('--lates-from');
const latesFromMs = latesAt < 0 ? null : Number(flags[latesAt + 1]);
const known = (awaitGo ? 1 : 0) + (latesAt < 0 ? 0 : 2);
if (!(seconds > 0 && seconds <= 3600) || !(thresholdMs > 0) || flags.length !== known || (latesFromMs !== null && !(latesFromMs > 0))) {
  process.stderr.write('usage: node stall-probe.js SECONDS THRESHOLD_MS [--await-go] [--lates-from MS] (0 < SECONDS <= 3600, MS > 0; SIGINT ends it early)\n');
  process.exit(2);
}
if (awaitGo) {
  // Started at normal priority, the caller raises this thread to real time (and pins it) once Node
  // is up, then sends SIGUSR2: Node's start-up run at real-time priority held a CPU from everything
  // else for 50-140 ms (measured as delivery pauses of that length when two probes started at once).
  const go = new Promise((resolve) => process.once('SIGUSR2', resolve));
  // A signal listener does not keep Node running; this timer does until the signal comes.
  const alive = setInterval(() => undefined, 60_000);
  process.stdout.write('ready\n');
  await Promise.race([go, new Promise((resolve) => process.once('SIGINT', resolve))]);
  clearInterval(alive);
}
process.stdout.write(JSON.stringify(await probe(seconds * 1000, thresholdMs, latesFromMs)) + '\n');

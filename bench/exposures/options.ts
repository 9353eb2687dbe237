/**
 * bench:exposures' options, and what every part of the run is given: the supervisor of its child
 * processes, a temp dir, the launch bundle, the throwaway PostgreSQL (started once, when a part
 * first asks for it) and the line printer.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { TargetCheck } from '../load/targets.js';
import { intOption, UsageError } from '../harness/cli-options.js';
import type { Supervisor } from '../harness/processes.js';
import type { RunningPostgres } from '../../test/helpers/postgres.js';

export const PARTS = ['steady', 'spike', 'launch', 'outage', 'fleet'] as const;
export type Part = (typeof PARTS)[number];

export const EXPOSURE_DBS = ['sqlite', 'postgres'] as const;
export type ExposureDb = (typeof EXPOSURE_DBS)[number];

export const USAGE = `usage: npm run bench:exposures -- [options]
  --parts LIST        which parts run, comma-separated (default all): steady (players already seen:
                      mapped and combine, exposures on against off, side by side), spike (a new player
                      every request, three experiments, side by side), launch (--players distinct
                      players at saturation on SQLite: exact rows, split, writer lag, RSS), outage
                      (the exposure PostgreSQL stopped under load), fleet (3 nodes, one PostgreSQL table)
  --players N         distinct players of the launch (default 1000000)
  --fleet-players N   distinct players sent to every node of the fleet (default 100000)
  --rounds N          side-by-side rounds of steady and spike, per scenario (default 5)
  --duration S        seconds per round, and per window of the outage part (default 5)
  --warmup S          seconds of load on both servers before the rounds, not counted (default 3)
  --connections N     wrk connections per server (default 100)
  --outage-s S        seconds the exposure database stays stopped (default 10)
  --exposure-db KIND  where the exposures-on server of steady and spike records: sqlite (default, a
                      file of its own) or postgres (a database on the run's throwaway PostgreSQL on
                      this machine; each round also reports the database's own CPU a request, and
                      the CPU ratio with it)
  --baseline DIR      another built checkout of rcd (npm run build there): steady and spike then load
                      it and this checkout, both recording exposures (each into a database of its
                      own, on --exposure-db), side by side: the figures are this checkout over the
                      baseline, and no target is judged (the targets are exposures on over off).
                      This checkout as its own baseline shows the rig's noise. Only with --parts
                      steady, spike or both
  --smoke             a few seconds in all (2,000 players, rounds of 1 s, a 2 s outage): checks that
                      the benchmark runs and that the table is exact; speed targets read n/a
  --check             exit 1 when a target FAILs
  --out DIR           where the results file goes (default $RCD_BENCH_RESULTS, else bench/results/local/)`;

export interface ExposuresOptions {
  readonly parts: readonly Part[];
  readonly players: number;
  readonly fleetPlayers: number;
  readonly rounds: number;
  readonly durationSec: number;
  readonly warmupSec: number;
  readonly connections: number;
  readonly outageSec: number;
  /** Where the exposures-on server of the side-by-side parts records. */
  readonly exposureDb: ExposureDb;
  /** A built checkout whose server, recording exposures too, takes the exposures-off server's place; null: none. */
  readonly baseline: string | null;
  readonly smoke: boolean;
  readonly check: boolean;
  readonly out: string | null;
}

export function parseOptions(argv: string[]): ExposuresOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      parts: { type: 'string' },
      players: { type: 'string' },
      'fleet-players': { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'outage-s': { type: 'string' },
      'exposure-db': { type: 'string' },
      baseline: { type: 'string' },
      smoke: { type: 'boolean', default: false },
      check: { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help === true) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const smoke = values.smoke === true;
  const parts = (values.parts ?? PARTS.join(',')).split(',').map((p) => p.trim());
  for (const p of parts) if (!(PARTS as readonly string[]).includes(p)) throw new UsageError(`--parts: unknown part "${p}"; known: ${PARTS.join(', ')}`);
  const exposureDb = values['exposure-db'] ?? 'sqlite';
  if (!(EXPOSURE_DBS as readonly string[]).includes(exposureDb)) throw new UsageError(`--exposure-db: "${exposureDb}" is not one of ${EXPOSURE_DBS.join(', ')}`);
  const chosen = PARTS.filter((p) => parts.includes(p));
  const baseline = values.baseline === undefined ? null : resolve(values.baseline);
  if (baseline !== null) {
    if (!existsSync(join(baseline, 'bin', 'rcd.js')) || !existsSync(join(baseline, 'dist'))) {
      throw new UsageError(`--baseline ${baseline} is not a built rcd checkout (needs bin/rcd.js and dist/: run npm run build there)`);
    }
    const other = chosen.filter((p) => p !== 'steady' && p !== 'spike');
    if (other.length > 0) throw new UsageError(`--baseline compares the side-by-side parts only: --parts steady, spike or both (not ${other.join(', ')})`);
  }
  return {
    parts: chosen,
    players: intOption('players', values.players, smoke ? 2000 : 1_000_000, 10, 100_000_000),
    fleetPlayers: intOption('fleet-players', values['fleet-players'], smoke ? 2000 : 100_000, 10, 10_000_000),
    rounds: intOption('rounds', values.rounds, smoke ? 1 : 5, 1, 100),
    durationSec: intOption('duration', values.duration, smoke ? 1 : 5, 1, 120),
    warmupSec: intOption('warmup', values.warmup, smoke ? 1 : 3, 0, 60),
    connections: intOption('connections', values.connections, smoke ? 20 : 100, 3, 10000),
    outageSec: intOption('outage-s', values['outage-s'], smoke ? 2 : 10, 1, 600),
    exposureDb: exposureDb as ExposureDb,
    baseline,
    smoke,
    check: values.check === true,
    out: values.out ?? null,
  };
}

export interface RunContext {
  readonly sup: Supervisor;
  /** A temp dir of the run, removed at its end. */
  readonly dir: string;
  /** The launch bundle (launch-fixture.ts), imported by every server. */
  readonly bundle: string;
  readonly opts: ExposuresOptions;
  /** The throwaway PostgreSQL of the run, started on first use. */
  postgres(): Promise<RunningPostgres>;
  /** Prints one line of the report. */
  say(line: string): void;
}

/** What a part measured (kept in the results file) and its targets' verdicts. */
export interface PartResult {
  readonly part: Part;
  readonly figures: Record<string, unknown>;
  readonly checks: readonly TargetCheck[];
}

/** A speed target's verdict: n/a in smoke runs, which check correctness only. */
export function speedVerdict(opts: ExposuresOptions, passes: boolean): TargetCheck['verdict'] {
  return opts.smoke ? 'n/a' : passes ? 'pass' : 'FAIL';
}

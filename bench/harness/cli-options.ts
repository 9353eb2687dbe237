// Command-line helpers shared by the benchmark programs: a usage error (the program prints it with
// its usage text and exits 2), the bounded whole-number option every one of them takes, and the
// start of the programs that read their servers' CPU from /proc.

import { isLinuxProcAvailable } from './measure.js';

export class UsageError extends Error {}

export function intOption(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be a whole number in ${min}..${max}, got "${raw}"`);
  return n;
}

/** `--node-flags`: options of node for rcd, space-separated, each starting with `--`. */
export function nodeFlagsOption(raw: string | undefined): string[] {
  const flags = (raw ?? '').split(' ').filter((f) => f !== '');
  const notAFlag = flags.find((f) => !f.startsWith('--'));
  if (notAFlag !== undefined) throw new UsageError(`--node-flags takes node options (each starting with --), got "${notAFlag}"`);
  return flags;
}

/**
 * The options of a program that reads its servers' CPU from /proc (`program`, as `bench:ab`), parsed
 * by `parse`; null once the reason it cannot run was printed (a usage error with `usage`, or no Linux
 * /proc): the program then exits 2.
 */
export function cpuBenchOptions<T>(program: string, argv: string[], parse: (argv: string[]) => T, usage: string): T | null {
  let opts: T;
  try {
    opts = parse(argv);
  } catch (err) {
    if (!(err instanceof UsageError) && !(err instanceof TypeError)) throw err;
    process.stderr.write(`${err.message}\n${usage}\n`);
    return null;
  }
  if (!isLinuxProcAvailable()) {
    process.stderr.write(`${program}: server CPU is read from /proc; it runs on Linux only\n`);
    return null;
  }
  return opts;
}

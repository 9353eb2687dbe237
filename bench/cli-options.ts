// Command-line helpers shared by the benchmark programs: a usage error (the program prints it with
// its usage text and exits 2) and the bounded whole-number option every one of them takes.

export class UsageError extends Error {}

export function intOption(name: string, raw: string | undefined, fallback: number, min: number, max: number): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${name} must be a whole number in ${min}..${max}, got "${raw}"`);
  return n;
}

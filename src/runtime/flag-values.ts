/**
 * How a flag's value is read and checked: by the flag's name, against its bounds or allowed values;
 * a value out of them is a ConfigError naming the flag (config.ts builds the configuration with them).
 */

/** A value the operator gave that is not valid (a flag, a key, a setting): its message says which and why. */
export class ConfigError extends Error {}

/** The value given for a flag by its name (without --), "" when it is absent. */
export type FlagValues = (name: string) => string;

export function intIn(get: FlagValues, name: string, min: number, max: number): number {
  const raw = get(name);
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function fractionIn(get: FlagValues, name: string): number {
  const raw = get(name);
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new ConfigError(`--${name} must be a number from 0 to 1, got "${raw}"`);
  return n;
}

export function oneOf<T extends string>(get: FlagValues, name: string, allowed: readonly T[]): T {
  const raw = get(name);
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`--${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
}

export function bool(get: FlagValues, name: string): boolean {
  const raw = get(name);
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`--${name} must be true or false, got "${raw}"`);
}

/** `parse()`, its error (a message naming the flag) as a ConfigError. */
export function checked<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    const message = (err as Error).message;
    throw new ConfigError(message.startsWith(`--${flag}`) ? message : `--${flag}: ${message}`);
  }
}

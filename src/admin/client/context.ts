/**
 * What every management command is given and the small helpers they share: the parsed arguments
 * (flags and positionals), the admin API client, and the output rule (a table for people, the
 * server's JSON with --json). Usage errors exit 2.
 */
import type { AdminClient } from './client.js';

/** Where a command writes and reads: the process's streams, or a test's buffers. */
export interface CliIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** Reads FILE, or standard input for `-`. */
  readonly readInput: (file: string) => Promise<Buffer>;
}

export class UsageError extends Error {}

const BOOLEAN_FLAGS = new Set(['json', 'help', 'force']);

export interface Parsed {
  readonly positionals: string[];
  readonly flags: Map<string, string>;
}

export function parseArgs(argv: readonly string[]): Parsed {
  const positionals: string[] = [];
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '-h') {
      flags.set('help', 'true');
    } else if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    } else if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq);
      if (BOOLEAN_FLAGS.has(name)) {
        flags.set(name, eq === -1 ? 'true' : arg.slice(eq + 1));
      } else if (eq !== -1) {
        flags.set(name, arg.slice(eq + 1));
      } else {
        const value = argv[i + 1];
        if (value === undefined) throw new UsageError(`--${name} needs a value`);
        flags.set(name, value);
        i++;
      }
    } else {
      positionals.push(arg);
    }
  }
  return { positionals, flags };
}

export interface Ctx {
  readonly io: CliIO;
  readonly args: Parsed;
  readonly json: boolean;
  readonly client: AdminClient;
}

export function flag(ctx: Ctx, name: string): string {
  const value = ctx.args.flags.get(name);
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export function positional(ctx: Ctx, index: number, name: string): string {
  const value = ctx.args.positionals[index];
  if (value === undefined) throw new UsageError(`${name} is required`);
  return value;
}

export function sub(ctx: Ctx, allowed: readonly string[]): string {
  const action = ctx.args.positionals[0];
  if (action === undefined || !allowed.includes(action)) {
    throw new UsageError(`expected one of: ${allowed.join(', ')}`);
  }
  return action;
}

export function out(ctx: Ctx, value: unknown, human: () => string): void {
  ctx.io.stdout(ctx.json ? JSON.stringify(value, null, 2) + '\n' : human());
}


/**
 * deploy/systemd/rcd.service and deploy/systemd/rcd.env as systemd reads them: a unit setting (the
 * last `Key=` wins), the environment the service runs with, and a setting in seconds.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './server-process.js';

export const UNIT = join(ROOT, 'deploy', 'systemd', 'rcd.service');
export const ENV_FILE = join(ROOT, 'deploy', 'systemd', 'rcd.env');

/** The unit file's text. */
export const unit = readFileSync(UNIT, 'utf8');

/** The value of `Key=` in the unit (the last one wins, as in systemd). */
export function setting(key: string): string | undefined {
  const lines = unit.split('\n').filter((l) => l.startsWith(`${key}=`));
  return lines.at(-1)?.slice(key.length + 1);
}

/** KEY=VALUE pairs of the unit's Environment= line and of the example environment file (which wins). */
export function unitEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of (setting('Environment') ?? '').split(/\s+/).filter((p) => p !== '')) {
    const at = pair.indexOf('=');
    env[pair.slice(0, at)] = pair.slice(at + 1);
  }
  for (const line of readFileSync(ENV_FILE, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m !== null) env[m[1]!] = m[2]!;
  }
  return env;
}

/** A systemd duration written as whole seconds (`20s` or `20`). */
export function seconds(value: string | undefined): number {
  const m = /^(\d+)s?$/.exec(value ?? '');
  if (m === null) throw new Error(`not a number of seconds: ${value}`);
  return Number(m[1]);
}

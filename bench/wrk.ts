/**
 * The optional latency pass (`npm run bench -- --wrk`): the same requests, sent by wrk.
 *
 * Why a second client: autocannon parses HTTP in JavaScript on one core; at 100 connections on this
 * 2-core box it saturates near 25-30k req/s, and its own queueing then sets every latency it reports
 * (the bare ceiling's p99 under autocannon is 6-11 ms). wrk is C and reaches ~100k req/s here, so its
 * latencies are the server's. It does not check bodies: autocannon's run of the same scenario did.
 * wrk is a Debian package (`apt-get install wrk`), not an npm dependency; without it `--wrk` is refused.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RequestEntry } from './scenarios.js';

export interface WrkStats {
  readonly reqPerSec: number;
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number };
  readonly non2xx: number;
  /** connect + read + write + timeout errors. */
  readonly socketErrors: number;
}

export function wrkAvailable(): boolean {
  const r = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  return r.error === undefined && /wrk/i.test(`${r.stdout}${r.stderr}`);
}

/**
 * A Lua string literal of the UTF-8 bytes of s: decimal escapes for anything but plain ASCII, always
 * three digits (Lua reads up to three, so `\34` before a digit would swallow it).
 */
function luaString(s: string): string {
  let out = '"';
  for (const b of Buffer.from(s, 'utf8')) {
    out += b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${String(b).padStart(3, '0')}`;
  }
  return out + '"';
}

/**
 * Writes a wrk script that cycles through the scenario's request pool, formatted once in init so
 * that sending a request costs wrk a table lookup.
 */
export function writeWrkScript(dir: string, name: string, pool: readonly RequestEntry[]): string {
  const lines = ['local entries = {'];
  for (const e of pool) {
    const headers = Object.entries(e.headers).map(([k, v]) => `[${luaString(k)}]=${luaString(v)}`).join(',');
    lines.push(`  {${luaString(e.method)},${luaString(e.path)},{${headers}},${e.body === undefined ? 'nil' : luaString(e.body)}},`);
  }
  lines.push(
    '}',
    'local formatted = {}',
    'local next = 0',
    'init = function(args)',
    '  for i, e in ipairs(entries) do formatted[i] = wrk.format(e[1], e[2], e[3], e[4]) end',
    'end',
    'request = function()',
    '  next = next % #formatted + 1',
    '  return formatted[next]',
    'end',
  );
  const path = join(dir, `wrk-${name}.lua`);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

function toMs(value: string, unit: string): number {
  const n = Number(value);
  if (unit === 'us') return n / 1000;
  if (unit === 's') return n * 1000;
  if (unit === 'm') return n * 60_000;
  return n;
}

/** Parses wrk's report (`--latency`); throws when a figure is missing. */
export function parseWrkOutput(text: string): WrkStats {
  const pct = (p: string): number => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(text);
    if (m === null) throw new Error(`wrk output has no ${p}% latency:\n${text}`);
    return toMs(m[1]!, m[2]!);
  };
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  if (rps === null) throw new Error(`wrk output has no Requests/sec:\n${text}`);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(text);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors = sock === null ? 0 : sock.slice(1, 5).reduce((n, v) => n + Number(v), 0);
  return {
    reqPerSec: Number(rps[1]),
    latencyMs: { p50: pct('50'), p90: pct('90'), p99: pct('99') },
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors,
  };
}

/** One wrk run (one thread, `connections` connections); `track` registers the child for cleanup. */
export function runWrk(url: string, script: string, connections: number, durationSec: number, track: (c: ChildProcess) => void): Promise<WrkStats> {
  const args = ['-t1', `-c${connections}`, `-d${Math.max(1, Math.round(durationSec))}s`, '--latency', '-s', script, url];
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) {
        reject(new Error(`wrk exited with ${code}:\n${out}`));
        return;
      }
      try {
        resolve(parseWrkOutput(out));
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

/**
 * wrk scripts of launch players: every request a player never seen before (`u` = PREFIX then a
 * counter), on the launch item. Two shapes:
 * - open-ended (`players` 0): a new player per request for as long as wrk runs (the spike rounds);
 * - exactly N (`players` N): players PREFIX0 .. PREFIX(N-1) in order, then repeats of them, until
 *   `players + margin` requests were made; wrk then stops itself (its thread stops, and a SIGINT to
 *   wrk wakes its main thread, which prints the report at once). The margin of repeats lets every
 *   first request still on its way be answered before wrk stops; repeats add no player.
 * The script's done() prints wrk's latency line (bench/harness/wrk.ts parseWrkOutput reads it) and
 * writes the requests made and completed to a side file, read back by readPlayersSent.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LAUNCH_BODY_HEAD, LAUNCH_BODY_TAIL, LAUNCH_HEADERS, LAUNCH_PATH } from './launch-fixture.js';

export interface PlayersScript {
  /** The wrk script. */
  readonly path: string;
  /** Where its done() writes `made completed` (requests). */
  readonly sidePath: string;
  readonly prefix: string;
  /** Distinct players it sends; 0 = a new one per request, open-ended. */
  readonly players: number;
  /** Requests after which it stops (players + margin); 0 when open-ended. */
  readonly stopAt: number;
}

function luaQuoted(s: string): string {
  return JSON.stringify(s);
}

/** Writes a players script into `dir` (its name from `name`); `margin` repeats follow the N players. */
export function writePlayersScript(dir: string, name: string, prefix: string, players: number, margin: number): PlayersScript {
  if (!/^[A-Za-z0-9_.:-]*$/.test(prefix)) throw new Error(`player prefix ${prefix} needs no escaping`);
  const path = join(dir, `wrk-players-${name}.lua`);
  const sidePath = join(dir, `wrk-players-${name}.sent`);
  const stopAt = players === 0 ? 0 : players + margin;
  const headers = Object.entries(LAUNCH_HEADERS)
    .map(([k, v]) => `[${luaQuoted(k)}]=${luaQuoted(v)}`)
    .join(',');
  const lua = [
    `local head = ${luaQuoted(LAUNCH_BODY_HEAD + prefix)}`,
    `local tail = ${luaQuoted(LAUNCH_BODY_TAIL)}`,
    `local path = ${luaQuoted(LAUNCH_PATH)}`,
    `local headers = {${headers}}`,
    `local players = ${players}`,
    `local stopAt = ${stopAt}`,
    // A global, so that done() reads it through thread:get.
    'made = 0',
    'local stopped = false',
    'local threads = {}',
    'setup = function(thread) table.insert(threads, thread) end',
    'request = function()',
    '  local i = made',
    '  made = made + 1',
    '  if players > 0 then',
    '    if i >= players then i = i % players end',
    '    if made >= stopAt and not stopped then',
    '      stopped = true',
    '      wrk.thread:stop()',
    // wrk's main thread sleeps for -d whatever its threads do; a SIGINT ends that sleep. It comes
    // from a shell left in the background (system() ignores SIGINT in its caller until it returns),
    // whose $PPID is wrk.
    '      os.execute("(sleep 0.1; kill -INT $PPID) >/dev/null 2>&1 &")',
    '    end',
    '  end',
    '  return wrk.format("POST", path, headers, head .. string.format("%d", i) .. tail)',
    'end',
    'done = function(summary, latency, requests)',
    '  io.write(string.format("rcd-latency-us p50=%d p90=%d p99=%d p999=%d max=%d\\n",',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.max))',
    '  local sum = 0',
    '  for _, t in ipairs(threads) do sum = sum + t:get("made") end',
    `  local f = io.open(${luaQuoted(sidePath)}, "w")`,
    '  f:write(string.format("%d %d\\n", sum, summary.requests))',
    '  f:close()',
    'end',
  ];
  writeFileSync(path, lua.join('\n') + '\n');
  return { path, sidePath, prefix, players, stopAt };
}

/** What a players script's run made and got answered (its side file), or null when wrk wrote none. */
export function readPlayersSent(script: PlayersScript): { made: number; completed: number } | null {
  let text: string;
  try {
    text = readFileSync(script.sidePath, 'utf8');
  } catch {
    return null;
  }
  const m = /^(\d+) (\d+)/.exec(text);
  return m === null ? null : { made: Number(m[1]), completed: Number(m[2]) };
}

/** Player `i` of a script's prefix, as the script spells it. */
export function playerName(prefix: string, i: number): string {
  return `${prefix}${i}`;
}

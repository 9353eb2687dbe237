// `rcd serve` raises TurboFan's inlining budget when it starts (src/runtime/inlining.ts), unless the
// operator gave node a budget of their own. Read from the real server's log and from V8's own trace
// of its inlining decisions (node --trace-turbo-inlining lists each callee it considers with its
// bytecode size; by default none over 460 bytes is considered).
import { afterAll, describe, expect, it } from 'vitest';
import { INLINING_FLAGS, operatorSetInlining } from '../../src/runtime/inlining.js';
import { BIN, call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'key-inlining-1';
const ADMIN_TOKEN = 'test-admin-token';
/** V8 11.3's default --max-inlined-bytecode-size. */
const DEFAULT_CALLEE_LIMIT = 460;
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const s of running) await s.dispose();
});

/** Requests per worker of load(): enough mapped and combine requests for the delivery code to be optimized. */
const ROUNDS = 1500;
/** Rounds between two reads of the trace when load() is told what it waits for. */
const ROUNDS_PER_LOOK = 125;

/**
 * Mapped and combine requests from four workers, each answering 200, for `rounds` rounds, or fewer
 * when `seen` is given: then the load stops at the first look (every ROUNDS_PER_LOOK rounds) at
 * which `seen` holds of the server's output. Answers the rounds sent.
 */
async function load(srv: ServerProcess, rounds: number, seen?: (stdout: string) => boolean): Promise<number> {
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
  expect((await fetch(`${srv.adminUrl!}/admin/v1/environments/demo/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ key: KEY }) })).status).toBe(201);
  const statuses = new Set<number>();
  let from = 0;
  while (from < rounds) {
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        for (let i = from; i < from + ROUNDS_PER_LOOK; i++) {
          const body = JSON.stringify({ u: `player-${worker}-${i}`, p: { level: i % 40 } });
          const path = i % 2 === 0 ? '/api/v1/config/PlayerSettings/dynamic' : `/api/v1/combine/?c=${encodeURIComponent('["PlayerSettings"]')}&dynamic=true`;
          statuses.add((await call(srv.url, path, { key: KEY, body })).status);
        }
      }),
    );
    from += ROUNDS_PER_LOOK;
    if (seen?.(srv.stdout()) === true) break;
  }
  expect([...statuses]).toEqual([200]);
  return from;
}

/**
 * The rounds after which the raised budget had TurboFan consider a callee over the default size (the
 * first test): the operator's budget is judged under the same load. ROUNDS when that test did not run.
 */
let roundsToRaise = ROUNDS;

function overDefaultLimit(stdout: string): boolean {
  return consideredSizes(stdout).some((size) => size > DEFAULT_CALLEE_LIMIT);
}

/**
 * The bytecode sizes of the callees TurboFan kept as candidates for inlining, from
 * --trace-turbo-inlining's candidate lists. Only a call site with one target counts: a polymorphic
 * site lists every target it saw, those over the budget included (V8 keeps the site when one of them
 * fits). Lines are matched whole because the main thread and the worker threads each trace their own
 * compilations into the same stdout, and one thread's text can land inside another's line.
 */
function consideredSizes(log: string): number[] {
  const monomorphic = /^- candidate: [^\n]*, 1 target\(s\):\n {2}- target: 0x[0-9a-f]+ \{0x[0-9a-f]+ <SharedFunctionInfo[^\n>]*>\}, bytecode size: (\d+)(?:, existing opt code's inlined bytecode size: \d+)?$/gm;
  return [...log.matchAll(monomorphic)].map((m) => Number(m[1]));
}

describe("TurboFan's inlining budget (rcd serve)", () => {
  it('is raised at start: callees over V8\'s default size are considered while requests are answered', async () => {
    const srv = await startServer({ admin: true, seedDemo: true, command: [process.execPath, '--trace-turbo-inlining', BIN] });
    running.push(srv);
    expect(srv.stdout()).toContain(`inlining: ${INLINING_FLAGS.join(' ')}`);
    // Until TurboFan considered a callee over the default size (the assertion below), at most ROUNDS.
    roundsToRaise = await load(srv, ROUNDS, overDefaultLimit);
    expect(await srv.stop()).toBe(0);
    const sizes = consideredSizes(srv.stdout());
    expect(sizes.length).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBeGreaterThan(DEFAULT_CALLEE_LIMIT);
  });

  it("keeps the operator's own budget from node's command line", async () => {
    const srv = await startServer({
      admin: true,
      seedDemo: true,
      command: [process.execPath, '--trace-turbo-inlining', `--max-inlined-bytecode-size=${DEFAULT_CALLEE_LIMIT}`, BIN],
    });
    running.push(srv);
    expect(srv.stdout()).toContain("inlining: the operator's V8 flags");
    // The load under which the raised budget considered a callee over the default size, and one look more.
    await load(srv, Math.min(ROUNDS, roundsToRaise + ROUNDS_PER_LOOK));
    expect(await srv.stop()).toBe(0);
    const sizes = consideredSizes(srv.stdout());
    expect(sizes.length).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(DEFAULT_CALLEE_LIMIT);
  });

  it('recognises the budget flags in either spelling', () => {
    expect(operatorSetInlining([])).toBe(false);
    expect(operatorSetInlining(['--single-threaded-gc', '--max-old-space-size=512'])).toBe(false);
    expect(operatorSetInlining(['--max-inlined-bytecode-size=900'])).toBe(true);
    expect(operatorSetInlining(['--max_inlined_bytecode_size_cumulative=2000'])).toBe(true);
  });
});

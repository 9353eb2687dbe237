/**
 * Delivery above the rest of the process (src/runtime/priority.ts), against real `rcd serve`
 * processes: the delivery loops and their pool threads run --delivery-nice steps above the threads
 * that edit (control, import, metrics), and stay there while an import runs below them; a process
 * without the right (no CAP_SYS_NICE, RLIMIT_NICE 0) changes no priority and says what it would take.
 *
 * Priorities are read from /proc (test/helpers/thread-nice.ts).
 */
import { getPriority } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';
import { mayLowerNiceTo } from '../../src/runtime/priority.js';
import { commandWithoutNiceRights, nices, sampleWhile } from '../helpers/thread-nice.js';

const TOKEN = 'test-admin-token';
const RAISE = 7;
const BULK_NICE = 6;
const BASE = getPriority(0);
const KEY = 'delivery-priority-key-01';

function bundle(count: number): string {
  const content: Record<string, { json: unknown }> = {};
  for (let i = 0; i < count; i++) content[`Item${String(i).padStart(5, '0')}`] = { json: { index: i } };
  return JSON.stringify({ environments: { prio: { keys: [KEY], content } } });
}

async function importBundle(srv: ServerProcess, body: string): Promise<number> {
  const res = await fetch(`${srv.adminUrl!}/admin/v1/import`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body });
  await res.arrayBuffer();
  return res.status;
}

/** Thread ids at `nice`. */
function threadsAt(map: Map<number, number>, nice: number): number[] {
  return [...map].filter(([, n]) => n === nice).map(([tid]) => tid);
}

describe('delivery above the rest of the process', () => {
  let srv: ServerProcess;
  const allowed = mayLowerNiceTo(BASE - RAISE);

  beforeAll(async () => {
    // Two loops (the main thread's and a loop thread), each with one pool thread.
    srv = await startServer({ admin: true, args: ['--delivery-nice', String(RAISE), '--bulk-nice', String(BULK_NICE), '--http-threads', '2'] });
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  it('runs both loops and their pool threads above the others, and keeps them there through an import', async () => {
    const pid = srv.child.pid as number;
    const before = nices(pid);
    if (!allowed) {
      expect(srv.stdout()).toContain(`delivery loops run at the priority of the rest of the process: nice ${BASE - RAISE} needs CAP_SYS_NICE or an RLIMIT_NICE of ${20 - BASE + RAISE}`);
      expect([...before.values()].every((n) => n === BASE)).toBe(true);
      return;
    }
    expect(srv.stdout()).toContain(`delivery loops and their worker pools run at nice ${BASE - RAISE}, the rest of the process at ${BASE}`);
    const raised = threadsAt(before, BASE - RAISE);
    // The main thread is loop 0; the loop thread and the two pool threads make four at least.
    expect(raised).toContain(pid);
    expect(raised.length).toBeGreaterThanOrEqual(4);
    // The control and metrics threads and V8's helpers stay where the process started.
    expect(threadsAt(before, BASE).length).toBeGreaterThanOrEqual(2);
    expect([...before.values()].every((n) => n === BASE || n === BASE - RAISE)).toBe(true);

    const { result, seen } = await sampleWhile([pid], importBundle(srv, bundle(20_000)));
    expect(result).toBe(200);
    for (const tid of raised) expect([...(seen[0]!.get(tid) ?? [BASE - RAISE])]).toEqual([BASE - RAISE]);
    // The import's write ran below delivery in a thread that was at the base before it.
    const lowered = [...seen[0]!].filter(([tid, set]) => before.get(tid) === BASE && set.has(BASE + BULK_NICE));
    expect(lowered.length).toBeGreaterThanOrEqual(1);
    const served = await call(srv.url, '/api/v1/config/Item19999', { key: KEY, body: '{"u":"p"}' });
    expect(served.json).toEqual({ index: 19999 });
  });
});

describe('delivery priority where the process may not raise it', () => {
  let srv: ServerProcess;

  beforeAll(async () => {
    srv = await startServer({ admin: true, args: ['--delivery-nice', String(RAISE)], command: commandWithoutNiceRights() });
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  it('leaves every thread at the process\'s priority, says what it would take, and serves', async () => {
    expect(srv.stdout()).toContain(`delivery loops run at the priority of the rest of the process: nice ${BASE - RAISE} needs CAP_SYS_NICE or an RLIMIT_NICE of ${20 - BASE + RAISE} (docs/operations.md)`);
    expect([...nices(srv.child.pid as number).values()].every((n) => n === BASE)).toBe(true);
    expect(await importBundle(srv, bundle(10))).toBe(200);
    const served = await call(srv.url, '/api/v1/config/Item00009', { key: KEY, body: '{"u":"p"}' });
    expect(served.json).toEqual({ index: 9 });
  });
});

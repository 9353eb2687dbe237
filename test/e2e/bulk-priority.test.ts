/**
 * Bulk edits yield the cores to delivery (src/runtime/priority.ts), against real `rcd serve`
 * processes on one SQLite file: while an import is written and published, the writing node's
 * control thread and the following node's run at --bulk-nice below delivery, and both go back to
 * delivery's priority after it; single writes never change a priority; a process that could not go
 * back (no CAP_SYS_NICE, RLIMIT_NICE 0) leaves its control thread where it is and says so.
 *
 * Priorities are read from /proc (field 19 of each thread's stat line), sampled while the import runs.
 */
import { getPriority } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';
import { mayLowerNiceTo } from '../../src/runtime/priority.js';
import { changedThreads, commandWithoutNiceRights, nices, sampleWhile } from '../helpers/thread-nice.js';

const TOKEN = 'test-admin-token';
const BULK_NICE = 6;
const IMPORT_NICE = 3;
const BASE = getPriority(0);
const KEY = 'bulk-priority-key-0001';

function bundle(prefix: string, count: number): string {
  const content: Record<string, { json: unknown }> = {};
  for (let i = 0; i < count; i++) content[`${prefix}${String(i).padStart(5, '0')}`] = { json: { index: i, on: i % 2 === 0 } };
  return JSON.stringify({ environments: { bulk: { keys: [KEY], content } } });
}

async function adminCall(srv: ServerProcess, method: string, path: string, body: string): Promise<number> {
  const res = await fetch(`${srv.adminUrl!}/admin/v1/${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` }, body });
  await res.arrayBuffer();
  return res.status;
}

describe('bulk edits at a lower CPU priority', () => {
  let a: ServerProcess;
  let b: ServerProcess;
  const allowed = mayLowerNiceTo(BASE);

  beforeAll(async () => {
    // Delivery at the process's priority here: every thread starts at BASE (test/e2e/delivery-priority.test.ts covers both together).
    const args = ['--bulk-nice', String(BULK_NICE), '--import-nice', String(IMPORT_NICE), '--delivery-nice', '0'];
    a = await startServer({ admin: true, args });
    b = await startServer({ store: a.storeUrl, args });
  });

  afterAll(async () => {
    await b?.dispose();
    await a?.dispose();
  });

  it('lowers both nodes\' control threads while an import is written and published, and puts them back after', async () => {
    const pids = [a.child.pid as number, b.child.pid as number];
    const before = pids.map(nices);
    for (const map of before) expect([...map.values()].every((n) => n === BASE)).toBe(true);
    const { result, seen } = await sampleWhile(pids, adminCall(a, 'POST', 'import', bundle('Bulk', 20_000)));
    expect(result).toBe(200);
    const served = await call(b.url, '/api/v1/config/Bulk19999', { key: KEY, body: '{"u":"p"}' });
    expect(served.json).toEqual({ index: 19999, on: false });
    if (allowed) {
      expect(a.stdout()).toContain(`run at nice ${BASE + BULK_NICE} in the control thread`);
      // A thread that was there before the import (the control thread; the import thread is new).
      expect(changedThreads(before[0]!, seen[0]!)).toContain(BASE + BULK_NICE);
      expect(changedThreads(before[1]!, seen[1]!)).toContain(BASE + BULK_NICE);
    } else {
      expect(a.stdout()).toContain('bulk edits run at the process\'s priority');
      expect(changedThreads(before[0]!, seen[0]!)).toEqual([]);
    }
    // Back where they were once the import answered (it answers after both nodes applied it).
    for (let i = 0; i < pids.length; i++) {
      const after = nices(pids[i]!);
      for (const [tid, nice] of before[i]!) if (after.has(tid)) expect(after.get(tid)).toBe(nice);
    }
  });

  it('leaves every priority alone for single writes', async () => {
    const pids = [a.child.pid as number, b.child.pid as number];
    const before = pids.map(nices);
    const writes = (async () => {
      for (let i = 0; i < 20; i++) {
        expect(await adminCall(a, 'PUT', `environments/bulk/content/Single${i}`, JSON.stringify({ n: i }))).toBe(200);
      }
    })();
    const { seen } = await sampleWhile(pids, writes);
    expect(changedThreads(before[0]!, seen[0]!)).toEqual([]);
    expect(changedThreads(before[1]!, seen[1]!)).toEqual([]);
  });
});

describe('bulk edits where the process could not take its priority back', () => {
  let srv: ServerProcess;

  beforeAll(async () => {
    srv = await startServer({ admin: true, args: ['--bulk-nice', String(BULK_NICE)], command: commandWithoutNiceRights() });
  });

  afterAll(async () => {
    await srv?.dispose();
  });

  it('runs them at the process\'s priority, says why at start, and imports as usual', async () => {
    expect(srv.stdout()).toContain('bulk edits run at the process\'s priority: going back to it after one needs CAP_SYS_NICE or an RLIMIT_NICE of 20');
    const pid = srv.child.pid as number;
    const before = nices(pid);
    const { result, seen } = await sampleWhile([pid], adminCall(srv, 'POST', 'import', bundle('Plain', 5_000)));
    expect(result).toBe(200);
    expect(changedThreads(before, seen[0]!)).toEqual([]);
    const served = await call(srv.url, '/api/v1/config/Plain04999', { key: KEY, body: '{"u":"p"}' });
    expect(served.json).toEqual({ index: 4999, on: false });
  });
});

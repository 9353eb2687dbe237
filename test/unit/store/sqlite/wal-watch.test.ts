// The WAL watch that wakes a follower when another connection commits (src/store/sqlite/wal-watch.ts),
// on real SQLite files with two real connections.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchWal } from '../../../../src/store/sqlite/wal-watch.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function openPair(): { path: string; a: Database.Database; b: Database.Database } {
  const dir = mkdtempSync(join(tmpdir(), 'rcd-wal-watch-'));
  dirs.push(dir);
  const path = join(dir, 'rcd.db');
  const a = new Database(path);
  a.pragma('journal_mode = WAL');
  a.exec('CREATE TABLE t (v TEXT)');
  const b = new Database(path);
  return { path, a, b };
}

function waitForCalls(calls: () => number, n: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve) => {
    const check = (): void => {
      if (calls() >= n) resolve(true);
      else if (Date.now() > deadline) resolve(false);
      else setTimeout(check, 5);
    };
    check();
  });
}

describe('watchWal', () => {
  it("wakes the watcher when another connection commits, and another connection's data_version moves", async () => {
    const { path, a, b } = openPair();
    let calls = 0;
    const w = watchWal(path, () => calls++);
    expect(w).not.toBeNull();
    try {
      const before = a.pragma('data_version', { simple: true }) as number;
      b.prepare('INSERT INTO t VALUES (?)').run('x');
      expect(await waitForCalls(() => calls, 1, 5000)).toBe(true);
      expect(a.pragma('data_version', { simple: true })).not.toBe(before);
    } finally {
      w?.close();
      a.close();
      b.close();
    }
  });

  it('coalesces a burst of commits into few wake-ups and stops after close', async () => {
    const { path, a, b } = openPair();
    let calls = 0;
    const w = watchWal(path, () => calls++);
    try {
      const insert = b.prepare('INSERT INTO t VALUES (?)');
      for (let i = 0; i < 50; i++) insert.run(String(i));
      expect(await waitForCalls(() => calls, 1, 5000)).toBe(true);
      // Fifty synchronous commits arrive within one turn: far fewer wake-ups than commits.
      expect(calls).toBeLessThan(50);
      w?.close();
      const after = calls;
      insert.run('late');
      await new Promise((r) => setTimeout(r, 100));
      expect(calls).toBe(after);
    } finally {
      a.close();
      b.close();
    }
  });

  it('ignores writes to other files of the folder', async () => {
    const { path, a, b } = openPair();
    let calls = 0;
    const w = watchWal(path, () => calls++);
    try {
      const other = new Database(join(path, '..', 'other.db'));
      other.pragma('journal_mode = WAL');
      other.exec('CREATE TABLE u (v TEXT)');
      other.prepare('INSERT INTO u VALUES (?)').run('x');
      other.close();
      await new Promise((r) => setTimeout(r, 100));
      expect(calls).toBe(0);
    } finally {
      w?.close();
      a.close();
      b.close();
    }
  });
});

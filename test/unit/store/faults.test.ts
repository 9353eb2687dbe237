/**
 * The SQLite store when its file is locked by another connection or deleted/replaced under it:
 * stable codes, bounded waits, and nothing acknowledged that is not durable.
 */
import Database from 'better-sqlite3';
import { copyFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';
import { rejectsWith, tempDir } from './helpers.js';

let store: Store;
let path: string;
let cleanup: () => void;

beforeEach(async () => {
  const t = tempDir();
  cleanup = t.cleanup;
  path = join(t.dir, 'rcd.db');
  store = await openStore(`sqlite:${path}`, { busyTimeoutMs: 100 });
  await store.putEnvironment('live');
});

afterEach(async () => {
  await store.close();
  cleanup();
});

describe('a lock held by another connection', () => {
  it('fails a write with store_busy after the busy timeout, and writes nothing', async () => {
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const started = performance.now();
      await rejectsWith(store.putEnvironment('other'), 'store_busy');
      const waited = performance.now() - started;
      expect(waited).toBeGreaterThanOrEqual(90);
      expect(waited).toBeLessThan(1000);
      await rejectsWith(store.recordKeyUse(['k_1'], new Date().toISOString()), 'store_busy');
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await store.listEnvironments()).map((e) => e.id)).toEqual(['live']);
    expect(await store.putEnvironment('other')).toBe(true);
  });
});

describe('files deleted or replaced under an open store', () => {
  it('reports nothing while the files are the ones opened', () => {
    expect(store.unavailableReason()).toBeNull();
  });

  it('refuses writes with store_unavailable once the database file is deleted', async () => {
    rmSync(path);
    expect(store.unavailableReason()).toMatch(/deleted/);
    await rejectsWith(store.putEnvironment('other'), 'store_unavailable');
    await rejectsWith(store.putContent('live', 'A', '{}', null), 'store_unavailable');
  });

  it('refuses writes once only the -wal file is deleted', async () => {
    rmSync(`${path}-wal`);
    await rejectsWith(store.putEnvironment('other'), 'store_unavailable');
  });

  it('refuses writes once another file is renamed over the database', async () => {
    copyFileSync(path, `${path}.copy`);
    renameSync(`${path}.copy`, path);
    expect(store.unavailableReason()).toMatch(/replaced/);
    await rejectsWith(store.putEnvironment('other'), 'store_unavailable');
  });

  it('a memory store has no files to lose', async () => {
    const memory = await openStore('memory:');
    try {
      expect(memory.unavailableReason()).toBeNull();
    } finally {
      await memory.close();
    }
  });
});

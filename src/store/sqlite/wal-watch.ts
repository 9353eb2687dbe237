/**
 * Wakes a follower as soon as any connection commits to a SQLite store: every commit appends to the
 * store's write-ahead log (`<file>-wal`), and the kernel reports the write to a watch on the folder
 * (inotify on Linux) at once, where a poll notices it only at its next tick. The data_version poll
 * stays as the fallback (store.ts: COMMIT_POLL_WATCHED_MS beside a watch, for an event it missed;
 * COMMIT_POLL_MS without one).
 *
 * The folder is watched rather than the file: SQLite may delete the WAL when the last connection
 * closes and create it again, which would end a watch on the file itself. Every event of the folder
 * that names the WAL wakes the caller, its own commits included (checking data_version then costs a
 * few microseconds and finds nothing new).
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export interface WalWatch {
  close(): void;
}

/**
 * Calls `onCommit` (at most once per turn of the event loop) whenever the WAL of the database file
 * at `dbPath` is written. Returns null where the platform cannot watch the folder: the caller then
 * relies on polling alone, as it does after `onLost` (the watch failed and closed).
 */
export function watchWal(dbPath: string, onCommit: () => void, onLost: () => void = noop): WalWatch | null {
  const wal = `${basename(dbPath)}-wal`;
  let scheduled = false;
  const fire = (): void => {
    scheduled = false;
    onCommit();
  };
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(dbPath), { persistent: false }, (_event, name) => {
      if (name !== wal || scheduled) return;
      scheduled = true;
      setImmediate(fire);
    });
  } catch {
    return null;
  }
  // A watch that fails later hands over to the poll (onLost: the store polls as often as without a
  // watch). A removed folder ends no watch with an error (Linux reports a rename of the folder); the
  // store reports a vanished file through its own identity check.
  watcher.on('error', () => {
    watcher.close();
    onLost();
  });
  return { close: () => watcher.close() };
}

function noop(): void {}

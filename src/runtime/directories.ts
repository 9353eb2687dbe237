/**
 * Creating a directory and its missing parents (the store's folder, the data directory).
 *
 * Why not `mkdirSync(path, { recursive: true })`: on Node 20 it loops forever, at 100% CPU, when a
 * missing parent lies in /proc (`rcd serve --store sqlite:/proc/x/rcd.db` never started and never
 * stopped; `node -e` shows the same). Made one level at a time, the first level the system refuses
 * throws its error (ENOENT, EACCES, ...) and the start stops with one line naming it.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeDirectories(path: string, mode: number): void {
  const missing: string[] = [];
  for (let p = resolve(path); !existsSync(p); ) {
    missing.push(p);
    const up = dirname(p);
    if (up === p) break;
    p = up;
  }
  for (let i = missing.length - 1; i >= 0; i--) {
    try {
      mkdirSync(missing[i]!, { mode });
    } catch (err) {
      // Made by someone else meanwhile: as good as made here.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

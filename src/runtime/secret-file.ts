/**
 * Small secret files in the data directory (admin token, webhook key): read with their mode
 * tightened, created once with mode 0600 (the directory 0700 when rcd creates it), never replaced.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { makeDirectories } from './directories.js';

/**
 * The file's text, or undefined when it does not exist. A copy restored from a backup may have lost
 * its mode; a secret readable by others is a leak, so a looser file is set to 0600 first.
 */
export function readSecretFile(path: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return text;
}

/**
 * Writes `text` to a new file (0600). False when the file exists already: another process wrote it a
 * moment ago, and replacing it would lose what that process handed out.
 *
 * The text goes into a file of its own first, which is then linked to `path` (link fails when `path`
 * exists): a process that finds the file finds it whole. Creating `path` itself and writing it left a
 * moment in which a second server starting in the same data directory read it empty and refused to
 * start ("exists but holds no token").
 */
export function createSecretFile(path: string, text: string): boolean {
  makeDirectories(dirname(path), 0o700);
  const draft = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(draft, text, { mode: 0o600, flag: 'wx' });
    linkSync(draft, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    // Also when the write failed part-way (a full disk): no draft is left behind.
    rmSync(draft, { force: true });
  }
}

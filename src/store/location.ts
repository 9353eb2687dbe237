/**
 * The SQLite database a store URL names: `sqlite:PATH` a file, `memory:` a fresh in-memory database
 * with a unique name, `memory:NAME` the named one (src/store/index.ts describes the URLs).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { RcdError } from '../runtime/errors.js';
import type { DbLocation } from './sqlite/driver.js';

const MEMORY_NAME = /^[A-Za-z0-9_-]{1,100}$/;
let memoryCounter = 0;

/** Parses a store URL. Throws invalid_request for an unknown scheme or a malformed URL. */
export function parseStoreUrl(url: string): DbLocation {
  if (typeof url !== 'string') throw new RcdError('invalid_request', 'the store URL must be a string');
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    if (path.length === 0) throw new RcdError('invalid_request', 'sqlite: needs a file path, e.g. sqlite:./data/rcd.db');
    return { kind: 'file', path: resolve(path) };
  }
  if (url.startsWith('memory:')) {
    const name = url.slice('memory:'.length);
    if (name.length === 0) {
      memoryCounter++;
      return { kind: 'memory', name: `${process.pid}-${memoryCounter}-${randomBytes(6).toString('hex')}` };
    }
    if (!MEMORY_NAME.test(name)) throw new RcdError('invalid_request', 'memory:NAME takes 1-100 of A-Z a-z 0-9 _ -');
    return { kind: 'memory', name };
  }
  throw new RcdError(
    'invalid_request',
    `unknown store URL ${JSON.stringify(url)}: use sqlite:PATH (e.g. sqlite:./data/rcd.db), memory: or postgres://user:password@host:port/database`,
  );
}

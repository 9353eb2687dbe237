/**
 * `remote-config-delivery/client/node`: the cache as a file in a directory (Node only). Written to a
 * temporary file and renamed over the previous one, so a crash mid-write leaves the previous state.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClientStorage } from '../storage.js';

export function directoryStorage(dir: string, options: { name?: string } = {}): ClientStorage {
  const file = join(dir, `${options.name ?? 'rcd-cache'}.json`);
  return {
    read: async () => {
      try {
        return await readFile(file, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    write: async (text) => {
      await mkdir(dir, { recursive: true });
      const tmp = `${file}.${process.pid}.tmp`;
      await writeFile(tmp, text, { mode: 0o600 });
      await rename(tmp, file);
    },
  };
}

import { existsSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../src/store/index.js';

// Worker threads run plain JavaScript: they load the compiled store from dist/ (built by the test
// global setup, like the e2e suites; RCD_TEST_DIST points elsewhere when needed).
const dist = process.env.RCD_TEST_DIST ?? fileURLToPath(new URL('../../../dist', import.meta.url));
const storeModule = pathToFileURL(`${dist}/src/store/index.js`).href;

interface WorkerAnswer {
  revision: unknown;
  mapping: string | null;
  missing: unknown;
  error?: string;
}

/** Runs openRevisionReader in a real worker thread and reads one revision and one mapping. */
function readInWorker(readerUrl: string, revId: number, mappingId: number): Promise<WorkerAnswer> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    import(workerData.storeModule).then((m) => {
      const reader = m.openRevisionReader(workerData.readerUrl);
      const answer = {
        revision: reader.readRevision(workerData.revId) ?? null,
        mapping: reader.readMapping(workerData.mappingId) ?? null,
        missing: reader.readRevision(workerData.revId + 100000) ?? null,
      };
      reader.close();
      parentPort.postMessage(answer);
    }).catch((err) => parentPort.postMessage({ error: String(err && err.stack || err) }));
  `;
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { storeModule, readerUrl, revId, mappingId } });
    w.once('message', (m: WorkerAnswer) => {
      void w.terminate();
      resolve(m);
    });
    w.once('error', reject);
  });
}

async function seed(store: Store): Promise<{ revId: number; mappingId: number; hash: string }> {
  await store.putEnvironment('e');
  await store.putContent('e', 'Game', '{\n  // comment\n  "level": 1\n}', null);
  const m = await store.putMapping('e', 'Game', { rules: [{ segment: 'vip', when: { tier: 'vip' }, patch: { level: 2 } }] });
  const rev = (await store.loadDirectory()).contents[0]!.revisions[0]!;
  return { revId: rev.revId, mappingId: m.mappingId, hash: rev.hash };
}

describe('openRevisionReader in a worker thread', () => {
  it('compiled store is available', () => {
    expect(existsSync(`${dist}/src/store/index.js`)).toBe(true);
  });

  it('reads a revision and a mapping of a memory: store while the main connection lives', async () => {
    const store = await openStore('memory:');
    try {
      const { revId, mappingId, hash } = await seed(store);
      const answer = await readInWorker(store.readerUrl, revId, mappingId);
      expect(answer.error).toBeUndefined();
      expect(answer.revision).toEqual({ revId, minified: '{"level":1}', hash });
      expect(JSON.parse(answer.mapping ?? 'null')).toEqual({ rules: [{ segment: 'vip', when: { tier: 'vip' }, patch: { level: 2 } }] });
      expect(answer.missing).toBeNull();
      // A write after the worker's read is visible to the next reader at once.
      const r = await store.putContent('e', 'Game', '{"level": 5}', null);
      const newest = (await store.loadDirectory()).contents[0]!.revisions[1]!;
      const again = await readInWorker(store.readerUrl, newest.revId, mappingId);
      expect(again.revision).toEqual({ revId: newest.revId, minified: '{"level":5}', hash: r.hash });
    } finally {
      await store.close();
    }
  });
});

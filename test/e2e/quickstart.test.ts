/**
 * What a newcomer sees on first start: a demo environment is seeded into an empty store and the
 * printed curl line works when pasted.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const dir = tempDir();
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.dispose();
});

/** Pulls URL path, key and body out of the printed curl line. */
function parseCurl(stdout: string): { url: string; key: string; body: string } {
  const line = stdout.split('\n').find((l) => l.includes('curl -s -X POST'));
  expect(line).toBeDefined();
  const url = /(http:\/\/\S+)/.exec(line!)![1]!;
  const key = /X-Api-Key: ([^']+)'/.exec(line!)![1]!;
  const body = /-d '([^']+)'/.exec(line!)![1]!;
  return { url, key, body };
}

describe('first start', () => {
  it('seeds a demo environment and prints a curl line that works', async () => {
    server = await startServer({ dir, seedDemo: true });
    expect(server.stdout()).toContain('seeded a demo environment');
    const { url, key, body } = parseCurl(server.stdout());
    const path = new URL(url).pathname;
    const r = await call(server.url, path, { key, body });
    expect(r.status).toBe(200);
    const json = r.json as { data: { difficulty: string }; meta: { seg: { n: string }[] } };
    expect(json.data.difficulty).toBe('hard');
    expect(json.meta.seg.map((s) => s.n)).toEqual(['veterans', 'reward-test']);
  });

  it('does not seed again on the next start, and prints the same key', async () => {
    const firstKey = parseCurl(server!.stdout()).key;
    await server!.stop();
    server = await startServer({ dir, seedDemo: true });
    expect(server.stdout()).not.toContain('seeded a demo environment');
    expect(parseCurl(server.stdout()).key).toBe(firstKey);
    const r = await call(server.url, '/api/v1/env/catalog', { key: firstKey, method: 'GET' });
    expect(Object.keys((r.json as { catalog: object }).catalog)).toEqual(['PlayerSettings', 'StoreLayout']);
  });
});

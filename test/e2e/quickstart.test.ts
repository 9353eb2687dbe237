/**
 * What a newcomer sees on first start: a demo environment is seeded into an empty store and the
 * printed curl line works when pasted; later starts do not print the key again.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const dir = tempDir();
let server: ServerProcess | undefined;
afterAll(async () => {
  await server?.dispose();
});

/** Pulls URL path, key and body out of the printed curl line; a key read from a file is read here. */
function parseCurl(stdout: string): { url: string; key: string; body: string } {
  const line = stdout.split('\n').find((l) => l.includes('curl -s -X POST'));
  expect(line).toBeDefined();
  const url = /(http:\/\/\S+)/.exec(line!)![1]!;
  const fromFile = /"X-Api-Key: \$\(cat '([^']+)'\)"/.exec(line!);
  const key = fromFile !== null ? readFileSync(fromFile[1]!, 'utf8').trim() : /X-Api-Key: ([^']+)'/.exec(line!)![1]!;
  const body = /-d '([^']+)'/.exec(line!)![1]!;
  return { url, key, body };
}

describe('first start', () => {
  let firstKey = '';

  it('seeds a demo environment and prints a curl line that works', async () => {
    server = await startServer({ dir, seedDemo: true });
    expect(server.stdout()).toContain('seeded a demo environment');
    const { url, key, body } = parseCurl(server.stdout());
    firstKey = key;
    expect(server.stdout()).toContain(`demo API key: ${key} (stored in ${join(dir, 'demo-api-key')})`);
    const path = new URL(url).pathname;
    const r = await call(server.url, path, { key, body });
    expect(r.status).toBe(200);
    const json = r.json as { data: { difficulty: string }; meta: { seg: { n: string }[] } };
    expect(json.data.difficulty).toBe('hard');
    expect(json.meta.seg.map((s) => s.n)).toEqual(['veterans', 'reward-test']);
  });

  it('does not seed again on the next start, and names the key file instead of printing the key', async () => {
    await server!.stop();
    server = await startServer({ dir, seedDemo: true });
    expect(server.stdout()).not.toContain('seeded a demo environment');
    // Keys are never logged: only the start that created it printed it.
    expect(server.stdout()).not.toContain(firstKey);
    expect(server.stdout()).toContain(`demo API key in ${join(dir, 'demo-api-key')}`);
    const { url, key, body } = parseCurl(server.stdout());
    expect(key).toBe(firstKey);
    expect((await call(server.url, new URL(url).pathname, { key, body })).status).toBe(200);
    const r = await call(server.url, '/api/v1/env/catalog', { key: firstKey, method: 'GET' });
    expect(Object.keys((r.json as { catalog: object }).catalog)).toEqual(['PlayerSettings', 'StoreLayout']);
  });
});

/**
 * The client's automatic retry (src/client/client.ts) against a real `rcd serve`: a refresh that
 * failed is retried by itself until the server answers, even when the retry's timer fires before
 * Date.now() reaches the retry time (timers count from the event loop's time of the turn that set
 * them; a turn that ran long before the failure was handled makes the gap large and certain here).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RcdClient, type RefreshResult } from '../../src/client/index.js';
import { freePort } from '../helpers/free-port.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'client-retry-key-0001';
let srv: ServerProcess | undefined;
let client: RcdClient | undefined;

afterEach(async () => {
  client?.close();
  await srv?.dispose();
  srv = undefined;
});

/** Blocks this thread for `ms` (what a busy game loop or a long render does between two awaits). */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

describe('client automatic retry', () => {
  it('retries by itself after a failure handled late in a long turn, and gets the values once the server is up', async () => {
    const port = await freePort();
    let failures = 0;
    client = new RcdClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      context: { u: 'player-1' },
      backoff: { baseMs: 200, maxMs: 400 },
      // The first failure is handled 150 ms into the turn that saw it: its retry timer then fires
      // ~150 ms before Date.now() reaches the retry time.
      fetch: async (url, init) => {
        try {
          return await fetch(url, init);
        } catch (err) {
          if (failures++ === 0) busy(150);
          throw err;
        }
      },
    });
    const results: RefreshResult[] = [];
    client.onRefresh((r) => results.push(r));
    const first = await client.refresh();
    expect(first.error?.code).toBe('network');

    srv = await startServer({ args: ['--port', String(port)], bundle: { environments: { live: { keys: [KEY], content: { Settings: { json: { lives: 3 } } } } } } });
    await expect.poll(() => results.some((r) => !r.fromCache), { timeout: 15_000, interval: 50 }).toBe(true);
    // No automatic attempt was turned away as "still waiting".
    expect(results.map((r) => r.error?.code ?? 'ok')).not.toContain('backoff');
    expect(client.get('Settings')).toEqual({ lives: 3 });
  });
});

/**
 * The delivery listener's idle timeout (uWS closes a connection idle for 10 s, sweeping every 4 s), on
 * the wall clock by nature, so this file is in npm run test:slow: the inputs the direct listener does
 * not answer are held without a byte until that timeout and then closed, and nginx in front (with
 * docs/nginx/rcd.conf) answers a request on an upstream keep-alive connection that sat idle past it.
 * http-layer.test.ts and nginx.test.ts check every other line of docs/security.md's table in npm test.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { UNANSWERED_INPUTS, healthHead } from '../helpers/http-inputs.js';
import { startBehindNginx, type NginxProcess } from '../helpers/nginx.js';
import { rawExchange } from '../helpers/raw.js';
import { call, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'idle-timeout-key-1';
const BUNDLE = { environments: { prod: { keys: [KEY], content: { Shop: { json: { items: ['sword'] } } } } } };

let server: ServerProcess;
let nginx: NginxProcess;
let port: number;

beforeAll(async () => {
  ({ server, nginx } = await startBehindNginx(BUNDLE));
  port = Number(new URL(server.url).port);
}, 60_000);
afterAll(async () => {
  await nginx?.stop();
  await server?.dispose();
});

// The two waits share the same 10 s: they run side by side.
describe.concurrent('the 10 s idle timeout', () => {
  it('the direct listener holds each input it does not answer without a byte until its idle timeout, then closes it', async ({ expect }) => {
    const outcomes = await Promise.all(UNANSWERED_INPUTS.map((input) => rawExchange(port, [input.bytes], { waitMs: 16_000 })));
    const table = UNANSWERED_INPUTS.map((input, i) => [input.name, outcomes[i]!.bytes.length, outcomes[i]!.closed]);
    expect(table).toEqual(UNANSWERED_INPUTS.map((input) => [input.name, 0, true]));
    for (const o of outcomes) {
      // Not before 1 s (the closes are uWS's idle sweep, every 4 s, for connections idle 10 s).
      expect(o.closeMs).toBeGreaterThan(1000);
      expect(o.closeMs).toBeLessThan(16_000);
    }
    const healthy = await rawExchange(port, [healthHead()], { untilResponses: 1 });
    expect(healthy.status).toBe(200);
    expect(server.child.exitCode).toBeNull();
  }, 30_000);

  it("nginx answers a POST after its keep-alive connection to rcd sat idle past rcd's 10 s idle timeout", async ({ expect }) => {
    expect((await call(nginx.url, '/api/v1/config/Shop', { key: KEY })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 11_000));
    const after = await call(nginx.url, '/api/v1/config/Shop', { key: KEY });
    expect(after.status).toBe(200);
  }, 30_000);
});

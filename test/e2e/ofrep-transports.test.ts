/**
 * OFREP on every transport the delivery listener has: plain HTTP, HTTPS (--tls-cert, the chain
 * verified by the client), and several delivery loops (--http-threads 2: each loop is a listener of
 * its own on the one port). On each, and on each loop, the real OpenFeature SDKs from npm (the
 * server SDK's OFREP provider, and the web SDK's OFREP provider run in Node with polling) evaluate
 * what the native endpoint answers, the web provider's polls get 304 until an edit and then see it,
 * and the change stream the bulk answer names carries the edit to streams on every loop.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OpenFeature as ServerFeature } from '@openfeature/server-sdk';
import { OpenFeature as WebFeature } from '@openfeature/web-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';
import { afterAll, describe, expect, it } from 'vitest';
import { agentFetch, singleConnectionAgent, type FetchLike } from '../helpers/agent-fetch.js';
import { createPki, issueLeaf } from '../helpers/pki.js';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';
import { NodeStream } from '../helpers/sse.js';

const KEY = 'ofrep-transport-key-1';
const AUTH = { authorization: 'Bearer test-admin-token' };
const BUNDLE = {
  environments: {
    live: {
      keys: [KEY],
      content: {
        Settings: { json: { difficulty: 'normal', lives: 3 } },
        Shop: {
          json: { currency: 'USD', refreshHours: 8 },
          mapping: { rules: [{ segment: 'refresh', variants: [{ name: 'A', mod: [0, 499], patch: { refreshHours: 6 } }, { name: 'B', mod: [500, 999], patch: { refreshHours: 12 } }] }] },
        },
      },
    },
  },
};
const CONTEXT = { targetingKey: 'player-7', country: 'DE' };
const silent = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

interface Transport {
  readonly name: string;
  readonly loops: number;
  /** Server arguments, and the root the client trusts (HTTPS), made in `dir`. */
  setUp(dir: string): { args: string[]; ca?: string };
}

const TRANSPORTS: readonly Transport[] = [
  { name: 'HTTP', loops: 1, setUp: () => ({ args: ['--http-threads', '1'] }) },
  {
    name: 'HTTPS',
    loops: 1,
    setUp(dir) {
      const pki = createPki(mkdirAt(join(dir, 'pki')));
      const leaf = issueLeaf(pki, 'leaf');
      writeFileSync(join(dir, 'cert.pem'), leaf.certPem);
      writeFileSync(join(dir, 'key.pem'), leaf.keyPem);
      writeFileSync(join(dir, 'chain.pem'), pki.intermediatePem);
      return { args: ['--http-threads', '1', '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'key.pem'), '--tls-ca', join(dir, 'chain.pem')], ca: pki.rootPem };
    },
  },
  { name: 'two delivery loops', loops: 2, setUp: () => ({ args: ['--threads', '2', '--http-threads', '2'] }) },
];

function mkdirAt(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

const servers: ServerProcess[] = [];
const dirs: string[] = [];
const agents: { destroy(): void }[] = [];

afterAll(async () => {
  await ServerFeature.close();
  await WebFeature.close();
  for (const a of agents) a.destroy();
  for (const s of servers) await s.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One fetch per delivery loop, each pinned to a keep-alive connection that loop accepted. */
async function fetchPerLoop(url: string, loops: number, ca: string | undefined): Promise<FetchLike[]> {
  const found = new Map<number, FetchLike>();
  for (let i = 0; i < 200 && found.size < loops; i++) {
    const agent = singleConnectionAgent(ca);
    const f = agentFetch(agent);
    const loop = ((await (await f(url + '/healthz')).json()) as { loop: number }).loop;
    if (found.has(loop)) agent.destroy();
    else {
      found.set(loop, f);
      agents.push(agent);
    }
  }
  expect([...found.keys()].sort()).toEqual(Array.from({ length: loops }, (_, i) => i));
  return [...found.values()];
}

async function adminPut(srv: ServerProcess, path: string, body: string): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method: 'PUT', headers: AUTH, body });
  expect(res.status, await res.text()).toBeLessThan(300);
}

describe.each(TRANSPORTS)('OFREP over $name', (transport) => {
  it('the real SDKs evaluate on every loop, polls get 304 until an edit and then see it, and the change stream reaches every loop', async () => {
    const dir = tempDir('rcd-ofrep-transport-');
    dirs.push(dir);
    const { args, ca } = transport.setUp(dir);
    const srv = await startServer({ admin: true, bundle: BUNDLE, args });
    servers.push(srv);
    expect(srv.url.startsWith(ca === undefined ? 'http:' : 'https:')).toBe(true);
    const fetches = await fetchPerLoop(srv.url, transport.loops, ca);
    const statuses: number[][] = fetches.map(() => []);

    for (const [loop, f] of fetches.entries()) {
      const domain = `${transport.name}-${loop}`;
      // The server SDK: one evaluation request per call, over this loop's connection.
      await ServerFeature.setProviderAndWait(domain, new OFREPProvider({ baseUrl: srv.url, headers: [['X-Api-Key', KEY]], fetchImplementation: f }));
      const details = await ServerFeature.getClient(domain).getObjectDetails('Shop', {}, CONTEXT);
      const native = (await (await f(srv.url + '/api/v1/config/Shop/dynamic', { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ u: CONTEXT.targetingKey, p: { country: 'DE' } }) })).json()) as {
        data: unknown;
        hash: string;
        meta: { uid: number; mod: number; seg: { n: string; v: string }[] };
      };
      expect(details).toMatchObject({ value: native.data, reason: 'SPLIT', variant: `refresh:${native.meta.seg[0]!.v}`, flagMetadata: { hash: native.hash, uid: native.meta.uid, mod: native.meta.mod } });

      // The web SDK's provider (static context, bulk evaluation), polling every 150 ms.
      const recording: FetchLike = async (input, init) => {
        const res = await f(input, init);
        statuses[loop]!.push(res.status);
        return res;
      };
      await WebFeature.setContext(domain, CONTEXT);
      await WebFeature.setProviderAndWait(domain, new OFREPWebProvider({ baseUrl: srv.url, headers: [['X-Api-Key', KEY]], fetchImplementation: recording, cacheMode: 'disabled', changeDetection: 'polling', pollInterval: 150 }, silent));
      expect(WebFeature.getClient(domain).getObjectValue('Settings', {})).toEqual({ difficulty: 'normal', lives: 3 });
      expect(WebFeature.getClient(domain).getObjectDetails('Shop', {})).toMatchObject({ value: native.data, reason: 'SPLIT' });
    }
    // Polls of an unchanged environment are 304 on every loop.
    await expect.poll(() => statuses.every((s) => s.filter((x) => x === 304).length >= 2), { timeout: 10_000 }).toBe(true);
    for (const s of statuses) expect(s[0]).toBe(200);

    // The change stream the bulk answer names: several streams, spread by the kernel over the loops.
    const bulk = (await (await fetches[0]!(srv.url + '/ofrep/v1/evaluate/flags', { method: 'POST', headers: { 'x-api-key': KEY, 'content-type': 'application/json' }, body: JSON.stringify({ context: CONTEXT }) })).json()) as {
      eventStreams: { endpoint: { requestUri: string } }[];
    };
    const streams = Array.from({ length: transport.loops === 1 ? 2 : 12 }, () => new NodeStream(srv.url + bulk.eventStreams[0]!.endpoint.requestUri, {}, ca));
    try {
      for (const s of streams) await s.until(() => s.events.length > 0);
      await adminPut(srv, 'environments/live/content/Settings', '{"difficulty":"hard","lives":1}');
      for (const s of streams) await s.until(() => s.events.some((e) => e.data === '{"type":"refetchEvaluation"}'));
    } finally {
      for (const s of streams) s.close();
    }
    // Every loop's poller sees the edit.
    for (const loop of fetches.keys()) {
      await expect.poll(() => WebFeature.getClient(`${transport.name}-${loop}`).getObjectValue('Settings', {}), { timeout: 10_000 }).toEqual({ difficulty: 'hard', lives: 1 });
    }
  }, 90_000);
});

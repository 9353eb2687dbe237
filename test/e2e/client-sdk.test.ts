/**
 * The client SDK in Node (the package's `remote-config-delivery/client` export, directory storage)
 * against the real server process, and `rcd export --client-defaults`. The same suite runs in
 * Chromium in test/e2e/client-sdk-chromium.test.ts.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/client-harness.mjs';
import { ALL, bundle, describeClientSdk, KEY, rcdExport, type Environment } from '../helpers/client-sdk-suite.js';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

function nodeEnvironment(): Environment {
  let harness: Harness;
  const dir = tempDir('rcd-client-');
  return {
    name: 'node',
    storages: ['dir:'],
    origin: () => null,
    setUp: async () => {
      // Through the package's own exports, as an application imports it.
      const sdk: unknown = await import('remote-config-delivery/client');
      const { directoryStorage } = (await import('remote-config-delivery/client/node')) as { directoryStorage: (d: string) => unknown };
      harness = createHarness(sdk, (name) => directoryStorage(join(dir, name)));
    },
    tearDown: () => Promise.resolve(),
    driver: (baseUrl, apiKey) => ({
      create: (o) => Promise.resolve(harness.create({ ...o, baseUrl, apiKey })),
      refresh: (id) => harness.refresh(id),
      refreshTwice: (id) => harness.refreshTwice(id),
      subscribe: (id) => Promise.resolve(harness.subscribe(id)),
      values: (id, ids) => Promise.resolve(harness.values(id, ids)),
      log: (id) => Promise.resolve(structuredClone(harness.log(id))),
      results: (id) => Promise.resolve(structuredClone(harness.results(id))),
      close: (id) => Promise.resolve(harness.close(id)),
    }),
  };
}

describeClientSdk(nodeEnvironment());

describe('rcd export --client-defaults', () => {
  /** One server for both tests, started by the first that needs it; the test that stops it lets the next start another. */
  let running: Promise<ServerProcess> | undefined;
  const server = (): Promise<ServerProcess> => (running ??= startServer({ admin: true, bundle: bundle() }));
  afterAll(async () => {
    await (await running)?.dispose();
  });

  it('refuses an unknown environment and a malformed --app-version with exit 1, writing nothing', async () => {
    const srv = await server();
    const unknown = await rcdExport(['--client-defaults', 'nope', '--admin-url', srv.adminUrl!]);
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    const bad = await rcdExport(['--client-defaults', 'live', '--app-version', '1.2', '--admin-url', srv.adminUrl!]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
  });

  it('writes h, d, hash and data per id, the same through the admin API and from the store file', async () => {
    const srv = await server();
    const viaAdmin = await rcdExport(['--client-defaults', 'live', '--admin-url', srv.adminUrl!]);
    expect(viaAdmin.code, viaAdmin.stderr).toBe(0);
    const defaults = JSON.parse(viaAdmin.stdout) as { format: string; env: string; appVersion: string | null; items: Record<string, { h: string; d: boolean; hash: string; data: unknown }> };
    expect(defaults).toMatchObject({ format: 'rcd-client-defaults/1', env: 'live', appVersion: null });
    expect(Object.keys(defaults.items)).toEqual(ALL);
    expect(defaults.items.Levels).toMatchObject({ d: false, data: { level: 2 } });
    expect(defaults.items.Levels!.hash).toBe(defaults.items.Levels!.h);
    expect(defaults.items.Promo).toMatchObject({ d: true, data: { banner: 'none' } });

    // The catalog's h and d, exactly.
    const catalog = (await (await fetch(`${srv.url}/api/v1/env/catalog`, { headers: { 'x-api-key': KEY, 'content-type': 'application/json' } })).json()) as { catalog: Record<string, { h: string; d: boolean }> };
    expect(Object.fromEntries(Object.entries(defaults.items).map(([id, i]) => [id, { h: i.h, d: i.d }]))).toEqual(catalog.catalog);

    // An older app version gets the revision it is delivered, under the same catalog h.
    const old = JSON.parse((await rcdExport(['--client-defaults', 'live', '--app-version', '1.0.0', '--admin-url', srv.adminUrl!])).stdout) as typeof defaults;
    expect(old.items.Levels).toMatchObject({ h: defaults.items.Levels!.h, data: { level: 1 } });
    expect(old.items.Levels!.hash).not.toBe(old.items.Levels!.h);

    // Stopped here and removed by this test: a test after it starts another.
    running = undefined;
    try {
      await srv.stop();
      const fromStore = await rcdExport(['--client-defaults', 'live', '--store', srv.storeUrl]);
      expect(fromStore.code, fromStore.stderr).toBe(0);
      expect((JSON.parse(fromStore.stdout) as typeof defaults).items).toEqual(defaults.items);
    } finally {
      await srv.dispose();
    }
  });
});

/**
 * The client SDK in Chromium (a page importing the esbuild browser build, IndexedDB and localStorage
 * storage, the delivery API on another origin with --cors-origins) against the real server process:
 * the suite test/e2e/client-sdk.test.ts runs in Node, here in a real browser.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../helpers/browser.js';
import { describeClientSdk, type Environment } from '../helpers/client-sdk-suite.js';
import { ROOT } from '../helpers/server-process.js';

function chromiumEnvironment(): Environment {
  let browser: Browser;
  let page: Page;
  let pages: Server;
  let origin = '';
  const files: Record<string, { type: string; body: Buffer }> = {};
  return {
    name: 'chromium',
    storages: ['idb:', 'ls:'],
    origin: () => origin,
    setUp: async () => {
      files['/rcd-client.js'] = { type: 'text/javascript', body: readFileSync(join(ROOT, 'dist/client/rcd-client.js')) };
      files['/client-harness.mjs'] = { type: 'text/javascript', body: readFileSync(join(ROOT, 'test/helpers/client-harness.mjs')) };
      files['/'] = {
        type: 'text/html; charset=utf-8',
        body: Buffer.from(`<!doctype html><title>rcd client</title><script type="module">
import * as sdk from '/rcd-client.js';
import { createHarness } from '/client-harness.mjs';
window.harness = createHarness(sdk, (name) => name.startsWith('ls:') ? sdk.localStorageStorage({ key: name }) : sdk.indexedDbStorage({ key: name }));
</script>`),
      };
      pages = createServer((req, res) => {
        const file = files[req.url ?? ''];
        if (file === undefined) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': file.type }).end(file.body);
      });
      await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
      browser = await launchChromium();
      page = await browser.newPage();
      await page.goto(origin + '/');
      await page.waitForFunction(() => 'harness' in globalThis);
    },
    tearDown: async () => {
      await browser?.close();
      await new Promise<void>((resolve) => pages?.close(() => resolve()));
    },
    driver: (baseUrl, apiKey) => {
      const call = <T,>(method: string, ...args: unknown[]): Promise<T> =>
        page.evaluate(([m, a]) => (globalThis as unknown as { harness: Record<string, (...x: unknown[]) => unknown> }).harness[m]!(...a), [method, args] as const) as Promise<T>;
      return {
        create: (o) => call('create', { ...o, baseUrl, apiKey }),
        refresh: (id) => call('refresh', id),
        refreshTwice: (id) => call('refreshTwice', id),
        subscribe: (id) => call('subscribe', id),
        values: (id, ids) => call('values', id, ids),
        log: (id) => call('log', id),
        results: (id) => call('results', id),
        close: (id) => call('close', id),
      };
    },
  };
}

describeClientSdk(chromiumEnvironment());

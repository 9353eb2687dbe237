/**
 * The API reference page in a real browser: swagger-ui renders both OpenAPI documents from the admin
 * listener's own files, with no request anywhere else (no CDN). openapi.test.ts checks the page, its
 * files and the documents over HTTP in `npm test`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServer({ admin: true, bundle: { environments: { live: { keys: ['openapi-page-key'], content: { Settings: { json: { a: 1 } } } } } } });
});

afterAll(async () => {
  await srv?.dispose();
});

describe('the reference page', () => {
  it('renders both documents with swagger-ui from the admin listener only (no CDN)', async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      await page.goto(`${srv.adminUrl}/openapi/`);
      await page.getByText('/api/v1/env/catalog').first().waitFor({ timeout: 15_000 });
      expect(requested.length).toBeGreaterThan(3);
      for (const url of requested) expect(url.startsWith(srv.adminUrl!) || url.startsWith('data:')).toBe(true);
    } finally {
      await browser.close();
    }
  });
});

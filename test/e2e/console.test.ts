/**
 * The web console in a real Chromium (Debian's package, driven by playwright-core) against the real
 * server process: a live-ops session from sign-in to the audit log, selecting controls by role and
 * accessible name as a screen reader would, and checking the delivery API sees each change.
 *
 * RCD_UPDATE_SCREENSHOTS=1 also writes the screenshots of docs/console.md into docs/console/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { openConsolePage, pasteIntoEditor } from '../helpers/console-page.js';
import { call, errorCode, ROOT, startServer, type ServerProcess } from '../helpers/server-process.js';
import { userMod, userUid } from '../../src/shared/identity.js';

const TOKEN = 'test-admin-token';

let srv: ServerProcess;
let browser: Browser;
let page: Page;
let consoleUrl: string;
const cspViolations: string[] = [];

async function adm(method: string, path: string, body?: object): Promise<{ status: number; json: Record<string, unknown> }> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${TOKEN}` } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, init);
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

function userIn(lo: number, hi: number): string {
  for (let i = 0; ; i++) {
    const u = `player-${i}`;
    const mod = userMod(userUid(u));
    if (mod >= lo && mod <= hi) return u;
  }
}

/** The page as docs/console.md shows it, written only when RCD_UPDATE_SCREENSHOTS=1 (no assertion reads it). */
async function shot(name: string): Promise<void> {
  if (process.env.RCD_UPDATE_SCREENSHOTS !== '1') return;
  mkdirSync(join(ROOT, 'docs', 'console'), { recursive: true });
  await page.screenshot({ path: join(ROOT, 'docs', 'console', `${name}.png`), fullPage: true });
}

// Browser-side code is written as text: this file is type-checked for Node (no DOM types).
const UNNAMED = `(() => {
  const out = [];
  for (const el of document.querySelectorAll('button, input, select, textarea, a[href], [role=textbox]')) {
    const labelled = el.labels ? el.labels.length : 0;
    const name = el.getAttribute('aria-label') ?? el.getAttribute('aria-labelledby') ?? (el.textContent ?? '').trim();
    if (labelled === 0 && name === '') out.push(el.outerHTML.slice(0, 120));
  }
  return out;
})()`;
const FOCUSED_LABEL = `document.activeElement?.labels?.[0]?.textContent?.trim() ?? ''`;
const STORED_TOKEN = `sessionStorage.getItem('rcd.adminToken')`;

/** Replaces the text of a CodeMirror editor the way a designer does (helpers/console-page.ts). */
async function setEditor(label: string, text: string): Promise<void> {
  await pasteIntoEditor(page, label, text);
}

/** Every focusable control on the page has an accessible name (label, aria-label(ledby) or text). */
async function unnamedControls(): Promise<string[]> {
  return page.evaluate<string[]>(UNNAMED);
}

beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--webhook-allow-private', 'true'] });
  consoleUrl = `${srv.adminUrl}/console/`;
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
});

describe('console assets on the admin listener', () => {
  it('serves index.html no-cache and hashed assets immutable, precompressed, with a strict CSP and no token', async () => {
    const index = await fetch(consoleUrl, { headers: { 'accept-encoding': 'br, gzip' } });
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('content-encoding')).toBe('br');
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe');
    const html = await index.text();
    const script = /src="(assets\/console-[A-Z0-9]+\.js)"/.exec(html)?.[1];
    const style = /href="(assets\/style-[A-Z0-9]+\.css)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    expect(style).toBeDefined();
    for (const [path, type] of [[script, 'text/javascript; charset=utf-8'], [style, 'text/css; charset=utf-8']] as const) {
      const gz = await fetch(consoleUrl + path, { headers: { 'accept-encoding': 'gzip' } });
      expect(gz.headers.get('content-type')).toBe(type);
      expect(gz.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(gz.headers.get('content-encoding')).toBe('gzip');
      expect(gz.headers.get('vary')).toBe('Accept-Encoding');
      const plain = await fetch(consoleUrl + path, { headers: { 'accept-encoding': 'identity' } });
      expect(plain.headers.get('content-encoding')).toBeNull();
      expect(await gz.text()).toBe(await plain.text());
    }
    expect((await fetch(`${consoleUrl}assets/nope.js`)).status).toBe(404);
    expect((await fetch(consoleUrl, { method: 'POST' })).status).toBe(405);
    // The API itself still needs the token.
    expect((await fetch(`${srv.adminUrl}/admin/v1/environments`)).status).toBe(401);
  });
});

describe('a live-ops session in Chromium', () => {
  const userA = userIn(0, 499);
  const userB = userIn(500, 999);
  let apiKey = '';

  it('signs in with the admin token using the keyboard only, and refuses a wrong one', async () => {
    await page.goto(consoleUrl);
    await page.keyboard.type('wrong-token-wrong-token');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('unauthorized');
    await page.getByLabel('Admin token').fill('');
    await shot('sign-in');
    await page.getByLabel('Admin token').focus();
    await page.keyboard.type(TOKEN);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Environments' }).waitFor();
    expect(await page.evaluate<string | null>(STORED_TOKEN)).toBe(TOKEN);
  });

  it('creates environments (keyboard only for the first)', async () => {
    // Tab to the field as a keyboard user would, type, Enter.
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      const name = await page.evaluate<string>(FOCUSED_LABEL);
      if (name.startsWith('New environment id')) break;
    }
    await page.keyboard.type('staging');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Environment staging created.' }).waitFor();
    await page.getByLabel('New environment id').fill('prod');
    await page.getByRole('button', { name: 'Create environment' }).click();
    await page.getByRole('status').filter({ hasText: 'Environment prod created.' }).waitFor();
    await page.getByRole('row', { name: /prod/ }).waitFor();
    expect(await unnamedControls()).toEqual([]);
    await shot('environments');
    // Delete asks first, naming what goes with it.
    await page.getByLabel('New environment id').fill('scratch');
    await page.getByRole('button', { name: 'Create environment' }).click();
    await page.getByRole('button', { name: 'Delete environment scratch' }).click();
    const confirm = page.getByRole('alertdialog');
    expect(await confirm.textContent()).toContain('Delete environment scratch? 0 content items and 0 keys');
    await confirm.getByRole('button', { name: 'Go back' }).click();
    expect((await adm('GET', 'environments')).json.environments).toHaveLength(3);
    await page.getByRole('button', { name: 'Delete environment scratch' }).click();
    await page.getByRole('button', { name: 'Yes, delete scratch' }).click();
    await page.getByRole('status').filter({ hasText: 'Environment scratch deleted.' }).waitFor();
    expect((await adm('GET', 'environments')).json.environments).toHaveLength(2);
  });

  it('adds content with a comment after showing a JSONC error at its line and column', async () => {
    await page.getByRole('link', { name: 'staging', exact: true }).click();
    await page.getByLabel('New content id').fill('Shop');
    await page.getByRole('button', { name: 'Add content' }).click();
    // Typed key by key, as a keyboard user edits.
    await page.getByRole('textbox', { name: 'Content JSONC' }).focus();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Delete');
    for (const line of ['{', '  // prices are in coins', '  "theme": "light",', '  "coins": 10,']) {
      await page.keyboard.type(line);
      await page.keyboard.press('Enter');
    }
    await page.keyboard.type('}');
    const alert = page.getByRole('alert').filter({ hasText: 'Invalid JSONC' });
    await alert.waitFor();
    // The server's own rule: a trailing comma is refused where the closing brace stands.
    expect(await alert.textContent()).toContain('line 5, column 1');
    expect(await page.getByRole('button', { name: 'Save content' }).isDisabled()).toBe(true);
    await shot('content-error');
    await setEditor('Content JSONC', '{\n  // prices are in coins\n  "theme": "light",\n  "coins": 10\n}');
    await page.getByRole('button', { name: 'Save content' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, save content' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved revision 1' }).waitFor();
    const stored = await adm('GET', 'environments/staging/content/Shop');
    expect((stored.json.revisions as { text: string }[])[0]?.text).toContain('// prices are in coins');
  });

  it('shows a refused mapping per rule, saves a valid one and previews two users in different variants', async () => {
    await setEditor('Mapping JSON', JSON.stringify({ rules: [{ segment: 'ab', variants: [{ name: 'dark', mod: [0, 600], patch: { theme: 'dark' } }, { name: 'blue', mod: [500, 999], patch: { theme: 'blue' } }] }] }));
    await page.getByRole('button', { name: 'Save mapping' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, save mapping' }).click();
    const problems = page.getByRole('alert', { name: 'Mapping problems' });
    await problems.waitFor();
    expect(await problems.getByRole('region', { name: 'Rule 0' }).textContent()).toContain('rules[0].variants');
    const mapping = { rules: [{ segment: 'ab', variants: [{ name: 'dark', mod: [0, 499], patch: { theme: 'dark' } }, { name: 'blue', mod: [500, 999], patch: { theme: 'blue' } }] }] };
    await setEditor('Mapping JSON', JSON.stringify(mapping, null, 2));
    await page.getByRole('button', { name: 'Save mapping' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, save mapping' }).click();
    await page.getByRole('status').filter({ hasText: 'Mapping saved: 1 rules' }).waitFor();
    const table = page.getByRole('table', { name: 'A/B tests: mod ranges over 0-999' });
    expect(await table.getByRole('row', { name: /dark/ }).textContent()).toContain('0-499');
    expect(await table.getByRole('row', { name: /blue/ }).textContent()).toContain('500-999');

    for (const [u, variant] of [[userA, 'dark'], [userB, 'blue']] as const) {
      await page.getByLabel('User id (u)').fill(u);
      await page.getByRole('button', { name: 'Preview', exact: true }).click();
      const result = page.getByRole('region', { name: 'Preview result' });
      await result.getByText(`mod ${userMod(userUid(u))}`).waitFor();
      expect(await result.getByRole('row', { name: /ab/ }).textContent()).toContain(variant);
      const answer = JSON.parse((await result.getByLabel('Delivered answer').textContent()) ?? '') as { data: { theme: string } };
      expect(answer.data.theme).toBe(variant);
      if (variant === 'blue') await shot('mapping-preview');
    }
    expect(await unnamedControls()).toEqual([]);
  });

  it('promotes to another environment after showing the per-item diff', async () => {
    await page.getByRole('link', { name: 'Promote' }).click();
    await page.getByLabel('From environment').selectOption('staging');
    await page.getByLabel('To environment').selectOption('prod');
    await page.getByRole('button', { name: 'Show changes' }).click();
    const plan = page.getByRole('region', { name: 'Planned changes' });
    await plan.getByRole('heading', { name: 'Shop: created' }).waitFor();
    expect(await plan.getByRole('region', { name: 'Diff of Shop' }).textContent()).toContain('"coins": 10');
    expect((await adm('GET', 'environments/prod/content')).json.content).toEqual([]);
    await shot('promote');
    expect(await unnamedControls()).toEqual([]);
    await page.getByLabel('Comment for the audit log (optional)').fill('release 1.4 content');
    await page.getByRole('button', { name: 'Confirm promotion to prod' }).click();
    await page.getByRole('status').filter({ hasText: 'Promoted staging to prod: 1 items' }).waitFor();
    const prod = await adm('GET', 'environments/prod/content/Shop');
    expect(prod.json.mapping).not.toBeNull();
    // The promotion's comment is in the audit log with it.
    const audit = (await adm('GET', 'audit?limit=5')).json as { entries: { action: string; detail: { comment?: string } | null }[] };
    expect(audit.entries.find((e) => e.action === 'environment.sync')?.detail?.comment).toBe('release 1.4 content');
  });

  it('diffs two revisions and rolls back', async () => {
    await page.goto(`${consoleUrl}#/env/staging/content/Shop`);
    await page.getByRole('heading', { name: 'Edit (newest: revision 1)' }).waitFor();
    await setEditor('Content JSONC', '{\n  // prices are in coins\n  "theme": "light",\n  "coins": 25\n}');
    await page.getByRole('button', { name: 'Save content' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, save content' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved revision 2' }).waitFor();
    await page.getByLabel('Compare revision').selectOption('1');
    await page.getByLabel('with revision').selectOption('2');
    const diff = page.getByRole('region', { name: 'Diff of revision 1 and revision 2' });
    expect(await diff.textContent()).toContain('"coins": 25');
    expect(await diff.getByLabel('removed').count()).toBe(1);
    expect(await diff.getByLabel('added').count()).toBe(1);
    await shot('content-history');
    await page.getByRole('button', { name: 'Roll back to revision 1' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, roll back to revision 1' }).click();
    await page.getByRole('status').filter({ hasText: 'revision 3 is a copy of revision 1' }).waitFor();
    const key = await adm('POST', 'environments/staging/keys');
    const served = await call(srv.url, '/api/v1/config/Shop', { key: key.json.key as string });
    expect(served.json).toEqual({ theme: 'light', coins: 10 });
  });

  it('creates a key shown once and revokes it: the delivery API refuses it at once', async () => {
    await page.getByRole('link', { name: 'Environments' }).click();
    await page.getByRole('link', { name: 'Keys of staging' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    const keyBox = page.getByLabel('New API key');
    await keyBox.waitFor();
    apiKey = await keyBox.inputValue();
    expect((await call(srv.url, '/api/v1/config/Shop', { key: apiKey })).status).toBe(200);
    const keyId = /New key (key_[0-9a-f]+)\./.exec((await page.getByText(/New key key_/).textContent()) ?? '')?.[1] ?? '';
    expect(keyId).not.toBe('');
    // Shown once: the listing (and a reload) never shows the key itself.
    expect(JSON.stringify((await adm('GET', 'environments/staging/keys')).json)).not.toContain(apiKey);
    await shot('keys');
    await page.getByRole('button', { name: `Revoke key ${keyId}` }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: `Yes, revoke ${keyId}` }).click();
    await page.getByRole('status').filter({ hasText: `Key ${keyId} revoked.` }).waitFor();
    const refused = await call(srv.url, '/api/v1/config/Shop', { key: apiKey });
    expect(refused.status).toBe(401);
    expect(errorCode(refused)).toBe('invalid_api_key');
  });

  it('registers a webhook (secret shown once) and deletes it', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Webhook URL').fill('http://127.0.0.1:9/hook');
    await page.getByLabel('content.deleted').uncheck();
    await page.getByRole('button', { name: 'Add webhook' }).click();
    expect(await page.getByLabel('Signing secret (shown once)').inputValue()).not.toBe('');
    const hooks = (await adm('GET', 'webhooks')).json.webhooks as { events: string[] }[];
    expect(hooks[0]?.events).toEqual(['content.updated', 'mapping.updated', 'environment.synced']);
    await page.getByRole('button', { name: 'Delete webhook http://127.0.0.1:9/hook' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, delete webhook' }).click();
    await page.getByRole('status').filter({ hasText: 'deleted' }).waitFor();
    expect((await adm('GET', 'webhooks')).json.webhooks).toEqual([]);
  });

  it('searches the content of an environment', async () => {
    await adm('PUT', 'environments/staging/content/PlayerSettings', {});
    await page.goto(`${consoleUrl}#/env/staging`);
    await page.getByRole('row', { name: /PlayerSettings/ }).waitFor();
    await page.getByLabel('Search content').fill('shop');
    await page.getByText('1 of 2 items').waitFor();
    const row = page.getByRole('row', { name: /Shop/ });
    expect(await row.textContent()).toContain('yes'); // mapping flag
    expect(await row.getByRole('cell').nth(1).textContent()).toBe('3'); // revisions
    await shot('content-list');
  });

  it('finds every step in the audit log, filtered by action', async () => {
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('table').waitFor();
    await shot('audit');
    for (const action of ['environment.create', 'environment.delete', 'webhook.add', 'webhook.delete', 'content.put', 'mapping.put', 'environment.sync', 'content.rollback', 'key.create', 'key.revoke']) {
      await page.getByLabel('Action', { exact: true }).selectOption(action);
      // Each step above was made through the console, which names itself as the actor.
      await page.getByRole('row', { name: action }).filter({ hasText: 'console' }).first().waitFor();
      const shown = await page.getByRole('row', { name: /^\d{4}-/ }).allTextContents();
      expect(shown.length).toBeGreaterThan(0);
      expect(shown.every((text) => text.includes(action))).toBe(true);
    }
    await page.getByLabel('Action', { exact: true }).selectOption('');
    await page.getByLabel('Environment', { exact: true }).selectOption('prod');
    expect(await page.getByRole('row', { name: 'environment.create' }).count()).toBe(1);
    expect(await unnamedControls()).toEqual([]);
  });

  it('loaded everything without a Content-Security-Policy violation', () => {
    expect(cspViolations).toEqual([]);
  });
});

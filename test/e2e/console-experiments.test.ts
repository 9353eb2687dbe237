/**
 * The console's Experiments page in a real Chromium (Debian's package, driven by playwright-core)
 * against the real server process recording exposures in SQLite (--exposures sqlite:PATH): players
 * are sent through the delivery API with `u` values chosen by their mod, so one experiment's split
 * is skewed (B gets 80% of players on a 50/50 configuration) and another is balanced. The open page
 * re-reads on its own and shows the counts in place, the sample ratio mismatch as a red alert on the
 * skewed experiment only; the detail view charts the players per variant with a legend and the same
 * alert. A server without --exposures lists the experiments and says how to switch recording on.
 *
 * RCD_UPDATE_SCREENSHOTS=1 also writes the Experiments screenshots of docs/console.md into docs/console/.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userMod, userUid } from '../../src/shared/identity.js';
import { launchChromium } from '../helpers/browser.js';
import { openConsolePage, signIn } from '../helpers/console-page.js';
import { call, ROOT, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
/** Variant A takes mods 0-499, B 500-999: a 50/50 configuration. */
const SPLIT = [
  { name: 'A', mod: [0, 499] as const },
  { name: 'B', mod: [500, 999] as const },
];
/** Players sent per variant: Shop:price skewed (chi-square 18, p < 0.001), Bonus:daily balanced. */
const SKEWED = { A: 10, B: 40 };
const BALANCED = { A: 20, B: 20 };
const MISMATCH = 'Sample ratio mismatch: B got 80% of players (40 of 50), configured 50% (p < 0.001). Check the client or the ranges before reading results.';

const dir = tempDir('rcd-console-experiments-');
let srv: ServerProcess;
let plain: ServerProcess;
let browser: Browser;
let page: Page;
const keys = new Map<ServerProcess, string>();
const cspViolations: string[] = [];

async function adm<T>(server: ServerProcess, method: string, path: string, body?: object): Promise<T> {
  const init: RequestInit = { method, headers: { authorization: `Bearer ${TOKEN}` } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${server.adminUrl}/admin/v1/${path}`, init);
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Environment `live` with two items, each with one A/B rule split 50/50: experiments Shop:price and Bonus:daily. */
async function setUp(server: ServerProcess): Promise<void> {
  await adm(server, 'PUT', 'environments/live');
  keys.set(server, (await adm<{ key: string }>(server, 'POST', 'environments/live/keys')).key);
  await adm(server, 'PUT', 'environments/live/content/Shop', { price: 100 });
  await adm(server, 'PUT', 'environments/live/content/Shop/mapping', { rules: [{ segment: 'price', variants: SPLIT.map((v, i) => ({ ...v, patch: { price: 90 + 20 * i } })) }] });
  await adm(server, 'PUT', 'environments/live/content/Bonus', { bonus: 0 });
  await adm(server, 'PUT', 'environments/live/content/Bonus/mapping', { rules: [{ segment: 'daily', variants: SPLIT.map((v, i) => ({ ...v, patch: { bonus: i + 1 } })) }] });
}

/** `n` distinct players (`u` values) whose mod falls in [lo, hi], so the rules place each in one variant. */
function playersIn(prefix: string, lo: number, hi: number, n: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) {
    const u = `${prefix}-${i}`;
    const mod = userMod(userUid(u));
    if (mod >= lo && mod <= hi) out.push(u);
  }
  return out;
}

/** Each player asks for `item` once through the delivery API (the wrapped endpoint), as a game client does. */
async function expose(item: string, perVariant: Record<string, number>): Promise<void> {
  for (const v of SPLIT) {
    for (const u of playersIn(`${item}-${v.name}`, v.mod[0], v.mod[1], perVariant[v.name]!)) {
      const reply = await call(srv.url, `/api/v1/config/${item}/dynamic`, { key: keys.get(srv)!, body: JSON.stringify({ u }) });
      expect(reply.status).toBe(200);
      expect((reply.json as { meta: { seg: { v: string }[] } }).meta.seg[0]!.v).toBe(v.name);
    }
  }
}

function experiment(name: string): Locator {
  return page.getByRole('region', { name: `Experiment ${name}` });
}

/** The players cell of a variant's row in a variants table. */
async function players(scope: Locator, variant: string): Promise<string> {
  const row = scope.locator('tr', { has: page.getByRole('rowheader', { name: variant, exact: true }) });
  return (await row.getByRole('cell').nth(1).textContent()) ?? '';
}

/** The page as docs/console.md shows it, written only when RCD_UPDATE_SCREENSHOTS=1. */
async function docsShot(name: string): Promise<void> {
  if (process.env.RCD_UPDATE_SCREENSHOTS === '1') await page.screenshot({ path: join(ROOT, 'docs', 'console', `${name}.png`), fullPage: true });
}

async function lastRead(): Promise<string> {
  return (await page.locator('.live-status time').textContent()) ?? '';
}

/**
 * The page's clock (Playwright's, installed before the page opened, running at the wall clock's pace
 * otherwise) jumps 15 s ahead: longer than the page's re-read period, so its re-read timer fires once,
 * as it would have after waiting that long.
 */
async function laterOnPage(): Promise<void> {
  await page.clock.fastForward(15_000);
}

beforeAll(async () => {
  // One after the other: a start that fails leaves no other server unnamed (afterAll stops what started).
  plain = await startServer({ admin: true });
  srv = await startServer({ admin: true, dir, args: ['--exposures', `sqlite:${join(dir, 'exposures.db')}`] });
  await Promise.all([setUp(srv), setUp(plain)]);
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations);
  await page.clock.install();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([srv?.dispose(), plain?.dispose()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('the Experiments page', () => {
  it('re-reads on its own, shows the counts in place, and warns of the skewed split only', async () => {
    await signIn(page, srv.adminUrl!, TOKEN);
    await page.getByRole('link', { name: 'live', exact: true }).click();
    await page.getByRole('navigation', { name: 'Environment live' }).getByRole('link', { name: 'Experiments' }).click();
    await page.getByRole('heading', { name: 'Experiments of live' }).waitFor();
    const shop = experiment('Shop:price');
    const bonus = experiment('Bonus:daily');
    await shop.getByRole('table', { name: 'Variants of Shop:price' }).waitFor();
    await bonus.getByRole('table', { name: 'Variants of Bonus:daily' }).waitFor();
    expect(await players(shop, 'B')).toBe('0');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(await page.getByRole('note').count()).toBe(0);
    // Marks the table as it is now: a re-read that rebuilt the page instead of updating it would lose the mark.
    await page.evaluate(`document.querySelector('[aria-label="Experiment Shop:price"] table').setAttribute('data-kept', 'yes')`);
    const readBefore = await lastRead();

    await expose('Shop', SKEWED);
    await expose('Bonus', BALANCED);
    // No reload: the page reads again when its period has passed on its clock (once the writer wrote the rows).
    await expect
      .poll(
        async () => {
          await laterOnPage();
          return [await players(shop, 'B'), await players(bonus, 'B')];
        },
        { timeout: 30_000, interval: 250 },
      )
      .toEqual(['40', '20']);
    expect(await players(shop, 'A')).toBe('10');
    expect(await players(bonus, 'A')).toBe('20');
    expect(await lastRead()).not.toBe(readBefore);
    expect(await page.locator('[data-kept="yes"]').count()).toBe(1);

    const alert = shop.getByRole('alert');
    expect(await alert.textContent()).toContain(MISMATCH);
    expect(await page.evaluate<string>(`getComputedStyle(document.querySelector('.srm-alert')).backgroundColor`)).toBe('rgb(185, 28, 28)');
    expect(await bonus.getByRole('alert').count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(1);
    const shopText = (await shop.textContent()) ?? '';
    expect(shopText).toContain('80%');
    expect(shopText).toMatch(/Players50/);
    expect(shopText).toMatch(/First exposure(just now|\d+ (s|min) ago) \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\)/);
    expect((await bonus.textContent()) ?? '').toContain('the split matches the configured shares');
    await docsShot('experiments');
  }, 90_000);

  it('charts an experiment\'s players per variant over time, with a legend and the same warning', async () => {
    await experiment('Shop:price').getByRole('link', { name: 'Shop:price' }).click();
    await page.getByRole('heading', { name: 'Experiment Shop:price of live' }).waitFor();
    await page.getByRole('img', { name: 'Players per variant of Shop:price, cumulative' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain(MISMATCH);
    const legend = page.getByRole('list', { name: 'Legend' });
    expect(await legend.getByRole('listitem').allTextContents()).toEqual(['A: 10 players', 'B: 40 players']);
    expect(await page.evaluate<number>(`document.querySelectorAll('.chart polyline').length`)).toBe(2);
    await docsShot('experiment-chart');

    await page.getByLabel('New players per hour').check();
    await page.getByRole('img', { name: 'New players per variant of Shop:price, per hour' }).waitFor();
    expect(await page.evaluate<number>(`document.querySelectorAll('.chart rect').length`)).toBeGreaterThanOrEqual(2);

    // The same numbers as a table, hour by hour (the players may straddle an hour's end).
    await page.getByText('Players per hour as a table').click();
    const table = page.getByRole('table', { name: 'New players per hour of Shop:price (UTC)' });
    const cells = (await table.getByRole('cell').allTextContents()).map(Number);
    expect(cells.filter((_, i) => i % 2 === 0).reduce((a, b) => a + b, 0)).toBe(10);
    expect(cells.filter((_, i) => i % 2 === 1).reduce((a, b) => a + b, 0)).toBe(40);

    await page.goto(`${srv.adminUrl}/console/#/env/live/experiments/Bonus%3Adaily`);
    await page.getByRole('img', { name: 'Players per variant of Bonus:daily, cumulative' }).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);

    await page.goto(`${srv.adminUrl}/console/#/env/live/experiments/Shop%3Anope`);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('experiment_not_found');
    expect(cspViolations).toEqual([]);
  });

  it('on a server without --exposures, lists the experiments and says how to record them', async () => {
    await signIn(page, plain.adminUrl!, TOKEN);
    await page.getByRole('link', { name: 'Experiments of live' }).click();
    await page.getByRole('heading', { name: 'Experiments of live' }).waitFor();
    const note = page.getByRole('note');
    await note.waitFor();
    expect(await note.textContent()).toContain('This server runs without --exposures');
    expect(await note.textContent()).toContain('docs/experiments.md');
    await experiment('Shop:price').getByRole('table', { name: 'Variants of Shop:price' }).waitFor();
    expect(await players(experiment('Shop:price'), 'A')).toBe('0');
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(cspViolations).toEqual([]);
  });
});

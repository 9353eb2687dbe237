/**
 * Live-ops on a clock in the web console, in a real Chromium (Debian's package, driven by
 * playwright-core) against the real server process: an environment's page links to its keys,
 * schedule and promotion; a change is scheduled from an item's page, the item previewed as it will
 * be at a later time (while delivery still answers the current one), and the change cancelled from
 * the timeline; one scheduled a few seconds ahead is seen applied; the kill switch disables a rule.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { openConsolePage, pasteIntoEditor, signIn } from '../helpers/console-page.js';
import { call, startServer, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let srv: ServerProcess;
let browser: Browser;
let page: Page;
let key: string;
const cspViolations: string[] = [];

async function adm<T>(method: string, path: string, body?: string | object): Promise<T> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return (await res.json()) as T;
}

/** A time `ms` from now as a datetime-local value in UTC (the form's time zone is set to UTC). */
function utcInput(ms: number): string {
  return new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().slice(0, 19);
}

/** Replaces the text of a CodeMirror editor by a paste, as a designer does. */
async function setEditor(label: string, text: string): Promise<void> {
  await pasteIntoEditor(page, label, text);
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await adm('PUT', 'environments/live');
  key = (await adm<{ key: string }>('POST', 'environments/live/keys')).key;
  await adm('PUT', 'environments/live/content/Shop', '{"theme":"default"}');
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations);
  await signIn(page, srv.adminUrl!, TOKEN);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
});

describe('the console on a clock', () => {
  it('an environment\'s own page links to its content, keys, schedule and promotion', async () => {
    await page.getByRole('link', { name: 'live', exact: true }).click();
    const nav = page.getByRole('navigation', { name: 'Environment live' });
    for (const name of ['Content', 'Keys', 'Schedule', 'Promotion']) await nav.getByRole('link', { name }).waitFor();
    await nav.getByRole('link', { name: 'Keys' }).click();
    await page.getByRole('heading', { name: 'API keys of live' }).waitFor();
    await page.getByRole('navigation', { name: 'Environment live' }).getByRole('link', { name: 'Schedule' }).click();
    await page.getByRole('heading', { name: 'Schedule of live' }).waitFor();
    await page.getByRole('heading', { name: 'Timeline of live' }).waitFor();
  });

  it('schedules a change of an item, previews the item at a later time, and cancels the change from the timeline', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByRole('heading', { name: 'Schedule a change of Shop' }).waitFor();
    await setEditor('JSONC of the scheduled change', '{\n  // for the event\n  "theme": "halloween"\n}');
    await page.getByLabel('Time zone of takes effect at').selectOption('utc');
    await page.getByLabel('Takes effect at', { exact: true }).fill(utcInput(3_600_000));
    await page.getByLabel('Note').fill('Halloween on');
    await page.getByRole('button', { name: 'Schedule change' }).click();
    const scheduled = page.getByRole('status').filter({ hasText: /Scheduled sch_/ });
    await scheduled.waitFor();
    const id = /sch_[0-9a-f]{20}/.exec((await scheduled.textContent()) ?? '')![0];
    const timeline = page.getByRole('list', { name: 'Scheduled changes of Shop' });
    const entry = timeline.getByRole('listitem', { name: `pending change ${id}` });
    await entry.waitFor();
    expect(await entry.textContent()).toContain('Halloween on');
    expect((await adm<{ status: string }>('GET', `environments/live/schedules/${id}`)).status).toBe('pending');

    // Previewed two hours ahead: the scheduled value; the delivery API still answers the current one.
    await page.getByLabel('User id (u)').fill('player-1');
    await page.getByLabel('As it will be at a time').check();
    await page.getByLabel('Time zone of preview at').selectOption('utc');
    await page.getByLabel('Preview at', { exact: true }).fill(utcInput(7_200_000));
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    const result = page.getByRole('region', { name: 'Preview result' });
    await result.getByText('As it will be at').waitFor();
    const answer = JSON.parse((await result.getByLabel('Delivered answer').textContent()) ?? '') as { data: { theme: string } };
    expect(answer.data.theme).toBe('halloween');
    expect((await call(srv.url, '/api/v1/config/Shop', { key })).json).toEqual({ theme: 'default' });
    expect((await adm<{ revisions: unknown[] }>('GET', 'environments/live/content/Shop')).revisions).toHaveLength(1);

    await entry.getByRole('button', { name: `Cancel ${id}` }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: `Yes, cancel ${id}` }).click();
    await page.getByRole('status').filter({ hasText: `Cancelled ${id}.` }).waitFor();
    await timeline.getByRole('listitem', { name: `cancelled change ${id}` }).waitFor();
    const cancelled = await adm<{ status: string; cancelReason: string }>('GET', `environments/live/schedules/${id}`);
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.cancelReason).toBe('cancelled by console');
  });

  it('shows a change scheduled a few seconds ahead as applied once its time has passed', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/schedule`);
    await page.getByLabel('Content id').fill('Banner');
    await setEditor('JSONC of the scheduled change', '{"text":"Happy Halloween"}');
    await page.getByLabel('Time zone of takes effect at').selectOption('utc');
    await page.getByLabel('Takes effect at', { exact: true }).fill(utcInput(3000));
    await page.getByRole('button', { name: 'Schedule change' }).click();
    const id = /sch_[0-9a-f]{20}/.exec((await page.getByRole('status').filter({ hasText: /Scheduled sch_/ }).textContent()) ?? '')![0];
    await expect.poll(async () => (await call(srv.url, '/api/v1/config/Banner', { key })).status, { timeout: 15_000 }).toBe(200);
    await page.reload();
    const applied = page.getByRole('list', { name: 'Scheduled changes of live' }).getByRole('listitem', { name: `applied change ${id}` });
    await applied.waitFor();
    expect(await applied.textContent()).toMatch(/applied .* ms after its time/);
  });

  it('the kill switch disables the rule after a confirmation, at once for every player', async () => {
    await adm('PUT', 'environments/live/content/Shop/mapping', { rules: [{ segment: 'everyone', patch: { theme: 'risky' } }] });
    const dyn = async (): Promise<{ data: { theme: string } }> => (await call(srv.url, '/api/v1/config/Shop/dynamic', { key, body: '{"u":"p1"}' })).json as { data: { theme: string } };
    expect((await dyn()).data.theme).toBe('risky');
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByRole('heading', { name: 'Kill switch' }).waitFor();
    await page.getByLabel('Disable').selectOption('0');
    await page.getByRole('button', { name: 'Kill switch…' }).click();
    const confirm = page.getByRole('alertdialog');
    expect(await confirm.textContent()).toContain('Disable rule 0 (everyone) of Shop for every player now');
    await confirm.getByRole('button', { name: /Yes, kill/ }).click();
    await page.getByRole('status').filter({ hasText: 'Killed rule 0 (everyone): 0 rules still apply' }).waitFor();
    expect((await dyn()).data.theme).toBe('default');
    expect(cspViolations).toEqual([]);
  });
});

/**
 * The console live, in a real Chromium (Debian's package, driven by playwright-core) against the
 * real server process: a screen left open across a scheduled change's time shows it applied without
 * a reload and loses its Cancel button; a change cancelled elsewhere (the kill switch, by the API)
 * shows at once; every live write asks first, naming the change, and its comment reaches the audit
 * log; a person signed in with a token of their own is named in the audit log; the start-up log and
 * the sign-in screen say where the admin token is.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { openConsolePage, signIn } from '../helpers/console-page.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };

let srv: ServerProcess;
let browser: Browser;
let page: Page;
const cspViolations: string[] = [];

async function adm<T>(method: string, path: string, body?: string | object): Promise<T> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return (await res.json()) as T;
}

async function schedule(at: number, text: string, id = 'Shop'): Promise<string> {
  const made = await adm<{ id: string }>('POST', 'environments/live/schedules', { at: new Date(at).toISOString(), ops: [{ op: 'content.put', id, text }] });
  return made.id;
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await adm('PUT', 'environments/live');
  await adm('PUT', 'environments/live/content/Shop', '{"theme":"default"}');
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
});

describe('the console, live', () => {
  it('the start-up log gives the console\'s address and where the token is; the sign-in screen says where to find it', async () => {
    const port = new URL(srv.adminUrl!).port;
    await expect.poll(() => srv.stdout()).toContain(`console at http://127.0.0.1:${port}/console/ (sign in with the admin token in the variable RCD_ADMIN_TOKEN)`);
    expect(srv.stdout()).not.toContain(TOKEN);
    await page.goto(`${srv.adminUrl}/console/`);
    const where = page.getByRole('heading', { name: 'Where to find the token' });
    await where.waitFor();
    const words = (await page.locator('.token-where').textContent()) ?? '';
    expect(words).toContain('RCD_ADMIN_TOKEN');
    expect(words).toContain('admin-token');
    expect(words).toContain('rcd token create');
  });

  it('a change applied while its item\'s page is open shows as applied without a reload, and loses its Cancel button', async () => {
    await signIn(page, srv.adminUrl!, TOKEN);
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByRole('heading', { name: 'Edit (newest: revision 1)' }).waitFor();
    await page.getByRole('status').filter({ hasText: '● Live' }).waitFor();
    const id = await schedule(Date.now() + 3000, '{"theme":"halloween"}');
    const list = page.getByRole('list', { name: 'Scheduled changes of Shop' });
    // Scheduled by the API, not by this page: it appears on its own.
    const pending = list.getByRole('listitem', { name: `pending change ${id}` });
    await pending.waitFor();
    await pending.getByRole('button', { name: `Cancel ${id}` }).waitFor();
    const applied = list.getByRole('listitem', { name: `applied change ${id}` });
    await applied.waitFor({ timeout: 15_000 });
    expect(await applied.getByRole('button', { name: `Cancel ${id}` }).count()).toBe(0);
    // The editor follows the revision the change made.
    await page.getByRole('heading', { name: 'Edit (newest: revision 2)' }).waitFor();
  });

  it('cancelling asks first, naming the change, and the comment reaches the audit log', async () => {
    const id = await schedule(Date.now() + 3_600_000, '{"theme":"xmas"}');
    const entry = page.getByRole('list', { name: 'Scheduled changes of Shop' }).getByRole('listitem', { name: `pending change ${id}` });
    await entry.getByRole('button', { name: `Cancel ${id}` }).click();
    const confirm = page.getByRole('alertdialog');
    const question = (await confirm.textContent()) ?? '';
    expect(question).toContain(`Cancel scheduled change ${id}`);
    expect(question).toContain('content.put Shop');
    // Backing out writes nothing.
    await confirm.getByRole('button', { name: 'Go back' }).click();
    expect((await adm<{ status: string }>('GET', `environments/live/schedules/${id}`)).status).toBe('pending');
    await entry.getByRole('button', { name: `Cancel ${id}` }).click();
    await confirm.getByLabel('Comment for the audit log (optional)').fill('Xmas moved to next week, für alle');
    await confirm.getByRole('button', { name: `Yes, cancel ${id}` }).click();
    await page.getByRole('status').filter({ hasText: `Cancelled ${id}.` }).waitFor();
    const audit = await adm<{ entries: { action: string; target: string; detail: { comment?: string } | null }[] }>('GET', 'audit?limit=5');
    expect(audit.entries.find((e) => e.action === 'schedule.cancel' && e.target === id)?.detail?.comment).toBe('Xmas moved to next week, für alle');
    await page.getByRole('link', { name: 'Audit log' }).click();
    const row = page.getByRole('row', { name: /schedule\.cancel/ }).first();
    await row.waitFor();
    expect(await row.textContent()).toContain('Xmas moved to next week, für alle');
  });

  it('the kill switch cancels the item\'s changes: the open page\'s list agrees with the count it reports', async () => {
    await adm('PUT', 'environments/live/content/Shop/mapping', { rules: [{ segment: 'everyone', patch: { theme: 'risky' } }] });
    const ids = [await schedule(Date.now() + 3_600_000, '{"theme":"a"}'), await schedule(Date.now() + 7_200_000, '{"theme":"b"}')];
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    const list = page.getByRole('list', { name: 'Scheduled changes of Shop' });
    for (const id of ids) await list.getByRole('listitem', { name: `pending change ${id}` }).waitFor();
    await page.getByRole('button', { name: 'Kill switch…' }).click();
    const confirm = page.getByRole('alertdialog');
    expect(await confirm.textContent()).toContain('Disable every rule of the mapping of Shop for every player now, and cancel every scheduled change of Shop');
    await confirm.getByRole('button', { name: /Yes, kill/ }).click();
    await page.getByRole('status').filter({ hasText: '2 scheduled change(s) cancelled' }).waitFor();
    for (const id of ids) await list.getByRole('listitem', { name: `cancelled change ${id}` }).waitFor();
    expect(await list.getByRole('listitem', { name: /^pending change/ }).count()).toBe(0);
  });

  it('a change made elsewhere appears on an open content list without a reload', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live`);
    await page.getByRole('row', { name: /Shop/ }).waitFor();
    await adm('PUT', 'environments/live/content/Arrived', '{}');
    await page.getByRole('row', { name: /Arrived/ }).waitFor();
  });

  it('a person signed in with a token of their own is named in the audit log, with their comment', async () => {
    const made = await adm<{ token: string }>('POST', 'tokens', { name: 'alice', role: 'editor', environments: '*' });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await signIn(page, srv.adminUrl!, made.token);
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByRole('heading', { name: /Edit \(newest: revision/ }).waitFor();
    await page.getByRole('button', { name: 'Roll back to revision 1' }).click();
    const confirm = page.getByRole('alertdialog');
    expect(await confirm.textContent()).toContain('Roll Shop in live back to revision 1?');
    await confirm.getByLabel('Comment for the audit log (optional)').fill('halloween is over');
    await confirm.getByRole('button', { name: 'Yes, roll back to revision 1' }).click();
    await page.getByRole('status').filter({ hasText: 'is a copy of revision 1' }).waitFor();
    // The item's own page says who changed it and why.
    const activity = page.getByRole('table', { name: /change\(s\) among the newest/ });
    const mine = activity.getByRole('row', { name: /content\.rollback/ }).first();
    await mine.waitFor();
    expect(await mine.textContent()).toContain('alice');
    expect(await mine.textContent()).toContain('halloween is over');
    await page.getByRole('link', { name: 'Audit log' }).click();
    const row = page.getByRole('row', { name: /content\.rollback/ }).first();
    await row.waitFor();
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('alice');
    expect(text).toContain('halloween is over');
    expect(cspViolations).toEqual([]);
  });
});

describe('the start-up log with a token file', () => {
  it('names the file the admin token is in, never the token', async () => {
    const other = await startServer({ admin: true, env: { RCD_ADMIN_TOKEN: '' } });
    try {
      await expect.poll(() => other.stdout()).toMatch(/console at http:\/\/127\.0\.0\.1:\d+\/console\/ \(sign in with the admin token in the file \S+admin-token\)/);
    } finally {
      await other.dispose();
    }
  });
});

/**
 * Scheduled changes you can read and edit, in the web console, in a real Chromium (Debian's package,
 * driven by playwright-core) against the real server process: a change's diff against what is live
 * now and against the state just before its time (the earlier change named); its text edited (a
 * refused text shown beside the editor, then a valid one saved); a preview at a time naming the
 * changes it folded in, with the answer's diff against now; a save that would make a pinned change
 * fail warned about, held, and made only when the editor goes ahead; a past time refused beside the
 * time field, in words.
 *
 * RCD_UPDATE_SCREENSHOTS=1 also writes docs/console/schedule-change-diff.png (docs/console.md).
 */
import { rmSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { consoleShot, openConsolePage, pasteIntoEditor, signIn } from '../helpers/console-page.js';
import { startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const SHOTS = tempDir('rcd-console-changes-shots-');

let srv: ServerProcess;
let browser: Browser;
let page: Page;
const cspViolations: string[] = [];
let autumn: string;
let halloween: string;

async function adm<T>(method: string, path: string, body?: string | object): Promise<T> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return (await res.json()) as T;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

/** A time `ms` from now as a datetime-local value in UTC (the form's time zone is set to UTC). */
function utcInput(ms: number): string {
  return new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().slice(0, 19);
}

async function shot(name: string): Promise<void> {
  await consoleShot(page, SHOTS, name);
}

async function setEditor(label: string, text: string): Promise<void> {
  await pasteIntoEditor(page, label, text);
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await adm('PUT', 'environments/live');
  await adm('PUT', 'environments/live/content/Shop', '{"theme":"default"}');
  autumn = (await adm<{ id: string }>('POST', 'environments/live/schedules', { at: isoIn(3_600_000), note: 'Autumn', ops: [{ op: 'content.put', id: 'Shop', text: '{"theme":"autumn"}' }] })).id;
  halloween = (await adm<{ id: string }>('POST', 'environments/live/schedules', { at: isoIn(7_200_000), note: 'Halloween on', ops: [{ op: 'content.put', id: 'Shop', text: '{\n  "theme": "halloween",\n  "pumpkins": 3\n}' }] })).id;
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations);
  await signIn(page, srv.adminUrl!, TOKEN);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
  rmSync(SHOTS, { recursive: true, force: true });
});

describe('scheduled changes in the console: read, edited, previewed, in the way of a save', () => {
  it('shows what a change writes against now and against just before its time, naming the earlier change', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/schedule`);
    const entry = page.getByRole('list', { name: 'Scheduled changes of live' }).getByRole('listitem', { name: `pending change ${halloween}` });
    await entry.getByRole('button', { name: `What ${halloween} writes` }).click();
    const writes = entry.getByRole('region', { name: `What ${halloween} writes` });
    const againstNow = writes.getByRole('region', { name: 'Text of Shop against what is live now' });
    await againstNow.waitFor();
    expect(await againstNow.textContent()).toMatch(/-.*"theme":"default"/);
    expect(await againstNow.textContent()).toContain('+  "pumpkins": 3');
    expect(await writes.getByRole('heading', { name: /Shop in live: revision 1 → 3/ }).count()).toBe(1);
    expect(await writes.getByRole('list', { name: 'Earlier pending changes folded in' }).textContent()).toContain(`${autumn} at`);

    await writes.getByLabel('Compare with').selectOption('before');
    const againstBefore = writes.getByRole('region', { name: 'Text of Shop against the state just before its time' });
    await againstBefore.waitFor();
    expect(await againstBefore.textContent()).toContain('-{"theme":"autumn"}');
    await writes.getByRole('heading', { name: /Shop in live: revision 2 → 3/ }).waitFor();
    await shot('schedule-change-diff');
  });

  it('edits the text of a pending change: a refused text is shown beside the editor, a valid one is saved', async () => {
    const entry = page.getByRole('list', { name: 'Scheduled changes of live' }).getByRole('listitem', { name: `pending change ${halloween}` });
    const writes = entry.getByRole('region', { name: `What ${halloween} writes` });
    await writes.getByRole('button', { name: `Edit the text of ${halloween}` }).click();
    await setEditor(`Text of ${halloween}`, '{ "theme": ');
    await writes.getByRole('button', { name: 'Save the new text' }).click();
    const beside = writes.locator(`#edit-error-${halloween}`);
    await beside.waitFor();
    expect(await beside.getAttribute('role')).toBe('alert');
    expect(await beside.textContent()).toMatch(/^the text of the change: /);
    expect(await beside.textContent()).not.toContain('ops.0.text');
    expect(JSON.parse((await adm<{ ops: { text: string }[] }>('GET', `environments/live/schedules/${halloween}`)).ops[0]!.text)).toEqual({ theme: 'halloween', pumpkins: 3 });

    await setEditor(`Text of ${halloween}`, '{\n  "theme": "halloween",\n  "pumpkins": 5\n}');
    await writes.getByRole('button', { name: 'Save the new text' }).click();
    await writes.getByRole('status').filter({ hasText: `Saved the new text of ${halloween}` }).waitFor();
    expect(JSON.parse((await adm<{ ops: { text: string }[] }>('GET', `environments/live/schedules/${halloween}`)).ops[0]!.text)).toEqual({ theme: 'halloween', pumpkins: 5 });
    // The diff follows the edit.
    await writes.getByRole('region', { name: 'Text of Shop against the state just before its time' }).getByText('"pumpkins": 5').waitFor();
    const audit = await adm<{ entries: { action: string; target: string }[] }>('GET', 'audit?limit=5');
    expect(audit.entries.some((e) => e.action === 'schedule.edit' && e.target === halloween)).toBe(true);
  });

  it('a preview at a later time names the pending changes it folded in and diffs the answer against now', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByLabel('User id (u)').fill('player-1');
    await page.getByLabel('As it will be at a time').check();
    await page.getByLabel('Time zone of preview at').selectOption('utc');
    await page.getByLabel('Preview at', { exact: true }).fill(utcInput(3 * 3_600_000));
    await page.getByRole('button', { name: 'Preview', exact: true }).click();
    const result = page.getByRole('region', { name: 'Preview result' });
    const folded = result.getByRole('list', { name: 'Pending changes folded in' });
    await folded.waitFor();
    const names = await folded.getByRole('listitem').allTextContents();
    expect(names).toHaveLength(2);
    expect(names[0]).toContain(`${autumn} at`);
    expect(names[0]).toContain('Autumn');
    expect(names[1]).toContain(`${halloween} at`);
    const diff = await result.getByRole('region', { name: 'Answer then against the answer now' }).textContent();
    expect(diff).toMatch(/-\s+"theme": "default"/);
    expect(diff).toMatch(/\+\s+"theme": "halloween"/);
  });

  it('warns before a save that would make a pinned change fail, naming it; saves only when told to go ahead', async () => {
    // Due before the other changes, pinned to the revision live now: a save moves it on.
    const pinned = (await adm<{ id: string }>('POST', 'environments/live/schedules', { at: isoIn(1_800_000), note: 'Winter, pinned', ops: [{ op: 'content.put', id: 'Shop', text: '{"theme":"winter"}', baseRevision: 1 }] })).id;
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Shop`);
    await page.getByRole('heading', { name: 'Edit (newest: revision 1)' }).waitFor();
    await setEditor('Content JSONC', '{"theme":"spring"}');
    await page.getByRole('button', { name: 'Save content' }).click();
    const warning = page.getByRole('alertdialog');
    await warning.waitFor();
    expect(await warning.textContent()).toContain('Saving Shop would make a scheduled change fail at its time');
    const named = await warning.getByRole('list', { name: 'Scheduled changes that would fail' }).textContent();
    expect(named).toContain(pinned);
    expect(named).toContain('Winter, pinned');
    expect(named).toContain('base_revision_changed');
    await warning.getByRole('button', { name: /^Don't/ }).click();
    expect(await page.getByRole('alertdialog').count()).toBe(0);
    expect((await adm<{ revisions: unknown[] }>('GET', 'environments/live/content/Shop')).revisions).toHaveLength(1);

    await page.getByRole('button', { name: 'Save content' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Go ahead anyway' }).click();
    // Past the warning, the save is confirmed as every live write is.
    await page.getByRole('button', { name: 'Yes, save content' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved revision 2' }).waitFor();
    expect((await adm<{ revisions: unknown[] }>('GET', 'environments/live/content/Shop')).revisions).toHaveLength(2);
  });

  it('a time in the past is refused beside the time field, in words', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/schedule`);
    await page.getByLabel('Content id').fill('Shop');
    await page.getByLabel('Time zone of takes effect at').selectOption('utc');
    await page.getByLabel('Takes effect at', { exact: true }).fill(utcInput(-3_600_000));
    await page.getByRole('button', { name: 'Schedule change' }).click();
    const beside = page.locator('#schedule-env-at-error');
    await beside.waitFor();
    const text = (await beside.textContent()) ?? '';
    expect(text).toMatch(/^the time the change takes effect: must be in the future/);
    expect(text).toContain('to change it now, save it on the item\'s page instead');
    // Said once, beside its field: not again as an API error below the form.
    expect(await page.getByRole('alert').filter({ hasText: 'invalid_body' }).count()).toBe(0);
    expect(cspViolations).toEqual([]);
  });
});

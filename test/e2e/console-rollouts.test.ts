/**
 * Rollouts and time in the web console, in a real Chromium (Debian's package, driven by
 * playwright-core) set to Europe/Berlin, against the real server process: a rollout created from an
 * item's page (its new rule added switched off by the console), seen running at its first step,
 * paused past its second step's time, resumed through the warning that asks what to do with that
 * step, advanced to its end (finished, the rule at 100%) and killed (the rule off), each state in
 * words on its card; the calendar with its now line and relative times; a time in the DST gap of
 * Europe/Berlin refused and one in its overlap asked about, with the zone's offset at the chosen date.
 *
 * RCD_UPDATE_SCREENSHOTS=1 also writes docs/console/calendar.png and docs/console/rollout-card.png.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../helpers/browser.js';
import { openConsolePage, signIn } from '../helpers/console-page.js';
import { call, ROOT, startServer, tempDir, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ZONE = 'Europe/Berlin';
const SHOTS = tempDir('rcd-console-rollout-shots-');

let srv: ServerProcess;
let browser: Browser;
let page: Page;
let key: string;
let rolloutId = '';
const cspViolations: string[] = [];

interface RolloutAnswer {
  status: string;
  killed: boolean;
  current: { disabled: boolean; percent: number } | null;
  steps: { percent: number; status: string; dueAt: string }[];
}

async function adm<T>(method: string, path: string, body?: string | object): Promise<T> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return (await res.json()) as T;
}

/** A time `ms` from now as a datetime-local value in UTC (the form's time zone is set to UTC). */
function utcInput(ms: number): string {
  return new Date(Math.ceil((Date.now() + ms) / 1000) * 1000).toISOString().slice(0, 19);
}

async function shot(name: string, target: Page | Locator): Promise<void> {
  const file = join(SHOTS, `${name}.png`);
  await target.screenshot({ path: file });
  if (process.env.RCD_UPDATE_SCREENSHOTS === '1') {
    mkdirSync(join(ROOT, 'docs', 'console'), { recursive: true });
    copyFileSync(file, join(ROOT, 'docs', 'console', `${name}.png`));
  }
}

function card(): Locator {
  return page.getByRole('region', { name: `Rollout ${rolloutId}` }).first();
}

async function difficulty(u: string): Promise<string> {
  return ((await call(srv.url, '/api/v1/config/Game/dynamic', { key, body: JSON.stringify({ u }) })).json as { data: { difficulty: string } }).data.difficulty;
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await adm('PUT', 'environments/live');
  await adm('PUT', 'environments/qa');
  key = (await adm<{ key: string }>('POST', 'environments/live/keys')).key;
  await adm('PUT', 'environments/live/content/Game', '{"difficulty":"normal"}');
  browser = await launchChromium();
  page = await openConsolePage(browser, cspViolations, ZONE);
  await signIn(page, srv.adminUrl!, TOKEN);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.dispose();
});

describe('a rollout steered from the console', () => {
  it('is created from the item\'s page with a new rule the console adds switched off, and runs its first step', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Game`);
    const form = page.getByRole('form', { name: 'Create a rollout of Game' });
    await form.waitFor();
    await form.getByLabel('Roll out').selectOption('new');
    await form.getByLabel('Segment of the new rule').fill('new-curve');
    await form.getByLabel('Patch of the new rule').fill('{"difficulty":"adaptive"}');
    await form.getByLabel('Time zone of starting at').selectOption('utc');
    await form.getByLabel('Starting share (%)').fill('5');
    await form.getByLabel('Share of step 2 (%)').fill('25');
    await form.getByLabel('Share of step 3 (%)').fill('100');
    // The second step falls due while the rollout is paused; the third waits an hour (advanced by hand).
    await form.getByLabel('Step 3 at', { exact: true }).fill(utcInput(3_600_000));
    await form.getByLabel('Step 2 at', { exact: true }).fill(utcInput(14_000));
    await form.getByLabel('Starting at', { exact: true }).fill(utcInput(4_000));
    await form.getByRole('button', { name: 'Create rollout' }).click();
    const made = form.getByRole('status').filter({ hasText: /rollout ro_[0-9a-f]{20} created/ });
    await made.waitFor();
    expect(await made.textContent()).toContain('Rule 0 (new-curve) added switched off; rollout');
    rolloutId = /ro_[0-9a-f]{20}/.exec((await made.textContent()) ?? '')![0];
    const mapping = await adm<{ mapping: { rules: { segment: string; disabled?: boolean }[] } }>('GET', 'environments/live/content/Game');
    expect(mapping.mapping.rules).toMatchObject([{ segment: 'new-curve', patch: { difficulty: 'adaptive' } }]);
    // The rule was switched off when the rollout was made: a rollback switches it off again.
    expect((await adm<{ before: unknown }>('GET', `environments/live/rollouts/${rolloutId}`)).before).toEqual({ disabled: true, mod: null });

    await card().getByText('Now at 5%', { exact: true }).waitFor({ timeout: 20_000 });
    expect(await card().getByRole('heading').textContent()).toContain('running');
    expect(await card().textContent()).toMatch(/Running: next step 2 \(25%\) in \d+ s\./);
    expect(await card().getByLabel(`Steps applied of rollout ${rolloutId}`).getAttribute('value')).toBe('1');
  }, 60_000);

  it('paused past its second step, resumes only through the warning, applying that step on request', async () => {
    await card().getByRole('button', { name: 'Pause rollout' }).click();
    // A live write: confirmed first, naming what changes, with a comment for the audit log.
    const asked = card().getByRole('alertdialog');
    expect(await asked.textContent()).toContain('Pause the rollout of Game, rule 0 (new-curve)?');
    await asked.getByLabel('Comment for the audit log (optional)').fill('event delayed by an hour');
    await asked.getByRole('button', { name: 'Yes, pause it' }).click();
    await card().getByRole('heading').filter({ hasText: 'paused' }).waitFor();
    const audit = await adm<{ entries: { action: string; detail: { comment?: string } | null }[] }>('GET', 'audit?limit=5');
    expect(audit.entries.find((e) => e.action.includes('pause'))?.detail?.comment).toBe('event delayed by an hour');
    const view = await adm<RolloutAnswer>('GET', `environments/live/rollouts/${rolloutId}`);
    expect(view.status).toBe('paused');
    const due = Date.parse(view.steps[1]!.dueAt);
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now()) + 1500));
    await card().getByText(/Step 2 \(25%\) was due \d+ s ago, while paused\./).waitFor();
    // Nothing applied while paused.
    expect((await adm<RolloutAnswer>('GET', `environments/live/rollouts/${rolloutId}`)).steps[1]!.status).toBe('paused');
    await shot('rollout-card', card());

    await card().getByRole('button', { name: 'Resume rollout' }).click();
    const warning = card().getByRole('alertdialog');
    expect(await warning.textContent()).toMatch(/Step 2 \(25%\) was due \d+ s ago, while the rollout was paused\. Resuming as planned would apply it at once/);
    await warning.getByRole('button', { name: 'Apply it now (25%)' }).click();
    await card().getByText('Now at 25%', { exact: true }).waitFor({ timeout: 15_000 });
    await card().getByRole('heading').filter({ hasText: 'running' }).waitFor();
    const resumed = await adm<RolloutAnswer>('GET', `environments/live/rollouts/${rolloutId}`);
    expect(resumed.steps.map((s) => s.status)).toEqual(['applied', 'applied', 'pending']);
  }, 60_000);

  it('advanced to its last step, reads finished with the rule at 100%, on the schedule page too', async () => {
    await card().getByRole('button', { name: 'Advance to the next step now' }).click();
    const confirm = card().getByRole('alertdialog');
    expect(await confirm.textContent()).toContain('Apply step 3 of Game now: rule 0 (new-curve) to 100% of players');
    await confirm.getByRole('button', { name: 'Yes, go to 100% now' }).click();
    await card().getByText('Finished: rule 0 (new-curve) is at 100%.').waitFor({ timeout: 15_000 });
    expect(await card().getByRole('heading').textContent()).toContain('finished');
    expect(await card().getByText('Now at 100%', { exact: true }).count()).toBe(1);
    expect(await difficulty('player-1')).toBe('adaptive');

    await page.goto(`${srv.adminUrl}/console/#/env/live/schedule`);
    await card().getByText('Finished: rule 0 (new-curve) is at 100%.').waitFor();
    expect(await card().textContent()).toContain('3 of 3 steps applied');
  }, 60_000);

  it('killed, reads killed with the rule off', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Game`);
    await page.getByRole('heading', { name: 'Kill switch' }).waitFor();
    await page.getByLabel('Disable').selectOption('0');
    await page.getByRole('button', { name: 'Kill switch…' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: /Yes, kill/ }).click();
    await card().getByText('Killed: the kill switch turned rule 0 (new-curve) off; it serves nobody.').waitFor({ timeout: 15_000 });
    expect(await card().getByRole('heading').textContent()).toContain('killed');
    expect(await card().textContent()).toContain('Now at 0%: rule 0 (new-curve) is off');
    expect(await card().getByRole('button').count()).toBe(0);
    expect(await difficulty('player-1')).toBe('normal');
    const view = await adm<RolloutAnswer>('GET', `environments/live/rollouts/${rolloutId}`);
    expect(view).toMatchObject({ status: 'completed', killed: true, current: { disabled: true, percent: 0 } });
  }, 60_000);
});

describe('time in the console', () => {
  it('the calendar shows the week with a now line and relative times, and a day per environment', async () => {
    await adm('POST', 'environments/qa/schedules', { at: new Date(Date.now() + 600_000).toISOString(), ops: [{ op: 'content.put', id: 'Banner', json: { text: 'hi' } }], note: 'Banner on' });
    await page.goto(`${srv.adminUrl}/console/`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Calendar' }).click();
    await page.getByRole('heading', { name: 'Calendar of every environment' }).waitFor();
    const table = page.getByRole('table');
    expect(await table.locator('caption').textContent()).toMatch(/^Week of \w{3} \d+ \w{3} in Europe\/Berlin \(UTC\+0[12]:00\): every environment$/);
    const now = table.getByRole('listitem', { name: /^Now, \d\d:\d\d$/ });
    await now.waitFor();
    await table.getByRole('listitem', { name: /^pending \d\d:\d\d qa: content\.put Banner — Banner on$/ }).waitFor();
    expect(await table.getByRole('listitem', { name: /Banner on/ }).textContent()).toMatch(/\(pending, in (9|10) min\)/);
    expect(await table.getByRole('listitem', { name: /^applied .* live: rollout step 1 Game/ }).textContent()).toMatch(/\(applied, \d+ (s|min) ago\)/);
    await shot('calendar', page);

    await page.getByLabel('View').selectOption('day');
    for (const env of ['live', 'qa']) await table.getByRole('columnheader', { name: env }).waitFor();
    // A now line in each environment's column.
    await now.first().waitFor();
    expect(await now.count()).toBe(2);
    await page.getByRole('combobox', { name: /^Environment/ }).selectOption('qa');
    expect(await table.getByRole('columnheader', { name: 'live' }).count()).toBe(0);
    await page.goto(`${srv.adminUrl}/console/#/env/live/calendar`);
    await page.getByRole('heading', { name: 'Calendar of live' }).waitFor();
  }, 60_000);

  it('refuses a time in the DST gap and asks which of the two times in the overlap, naming the zone', async () => {
    await page.goto(`${srv.adminUrl}/console/#/env/live/content/Game`);
    const form = page.getByRole('form', { name: 'Schedule a change of Game' });
    await form.waitFor();
    const zoneChoice = form.getByLabel('Time zone of takes effect at');
    await zoneChoice.selectOption('local');
    const time = form.getByLabel('Takes effect at', { exact: true });
    // The label is the zone's offset at the chosen date, not today's.
    await time.fill('2027-07-01T12:00');
    expect(await zoneChoice.locator('option[value=local]').textContent()).toBe("This browser's: Europe/Berlin (UTC+02:00)");
    await time.fill('2027-01-15T12:00');
    expect(await zoneChoice.locator('option[value=local]').textContent()).toBe("This browser's: Europe/Berlin (UTC+01:00)");

    const before = (await adm<{ schedules: unknown[] }>('GET', 'environments/live/schedules')).schedules.length;
    await time.fill('2027-03-28T02:30');
    const gap = '02:30 on 28 March 2027 does not exist in Europe/Berlin: the clocks go from 02:00 (UTC+01:00) straight to 03:00 (UTC+02:00). Choose another time.';
    await form.getByRole('alert').filter({ hasText: gap }).first().waitFor();
    await form.getByRole('button', { name: 'Schedule change' }).click();
    expect(await form.getByRole('alert').filter({ hasText: gap }).count()).toBe(2);
    expect((await adm<{ schedules: unknown[] }>('GET', 'environments/live/schedules')).schedules).toHaveLength(before);

    await time.fill('2027-10-31T02:30');
    const which = form.getByRole('group', { name: /02:30 on 31 October 2027 happens twice in Europe\/Berlin \(the clocks go back\)\. Which takes effect at\?/ });
    await which.waitFor();
    expect(await zoneChoice.locator('option[value=local]').textContent()).toBe("This browser's: Europe/Berlin (UTC+02:00 or UTC+01:00)");
    await form.getByRole('button', { name: 'Schedule change' }).click();
    await form.getByRole('alert').filter({ hasText: 'happens twice in Europe/Berlin (the clocks go back): choose the first (UTC+02:00) or the second (UTC+01:00)' }).waitFor();
    await which.getByLabel('The second: UTC+01:00 (01:30 UTC)').check();
    expect(await zoneChoice.locator('option[value=local]').textContent()).toBe("This browser's: Europe/Berlin (UTC+01:00)");
    await form.getByRole('button', { name: 'Schedule change' }).click();
    const scheduled = form.getByRole('status').filter({ hasText: /Scheduled sch_/ });
    await scheduled.waitFor();
    const id = /sch_[0-9a-f]{20}/.exec((await scheduled.textContent()) ?? '')![0];
    expect((await adm<{ at: string }>('GET', `environments/live/schedules/${id}`)).at).toBe('2027-10-31T01:30:00.000Z');
    expect(cspViolations).toEqual([]);
  }, 60_000);
});

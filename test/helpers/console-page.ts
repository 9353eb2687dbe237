/**
 * A page of the admin console in Chromium as the console's end-to-end tests open it: desktop size,
 * each step failing after 10 s (naming the locator it could not find), and every
 * Content-Security-Policy violation the browser reports collected, for the tests to expect none;
 * optionally in a time zone of the test's choosing (the browser's own zone, as the console sees it).
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ROOT } from './server-process.js';

export async function openConsolePage(browser: Browser, cspViolations: string[], timezoneId?: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, ...(timezoneId === undefined ? {} : { timezoneId }) });
  page.setDefaultTimeout(10_000);
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  return page;
}

/** Opens the console at `adminUrl` and signs in with `token`, as a person does, up to the Environments screen. */
export async function signIn(page: Page, adminUrl: string, token: string): Promise<void> {
  await page.goto(`${adminUrl}/console/`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Environments' }).waitFor();
}

/**
 * Replaces the text of the console's CodeMirror editor named `label` (editors live in shadow roots)
 * the way a designer does: focus, select all, paste (a paste reaches the editor as plain text, where
 * typed runs of spaces could turn into no-break spaces).
 */
export async function pasteIntoEditor(page: Page, label: string, text: string): Promise<void> {
  await page.getByRole('textbox', { name: label }).click();
  await page.keyboard.press('Control+A');
  // Browser-side code as text: the tests are type-checked for Node (no DOM types).
  await page.evaluate(`(() => {
    const data = new DataTransfer();
    data.setData('text/plain', ${JSON.stringify(text)});
    for (const host of document.querySelectorAll('.editor')) {
      const el = host.shadowRoot?.querySelector('[aria-label=${JSON.stringify(label)}]');
      if (el) el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    }
  })()`);
}

/** A full-page screenshot into `dir`; with RCD_UPDATE_SCREENSHOTS=1 also copied to docs/console/ for docs/console.md. */
export async function consoleShot(page: Page, dir: string, name: string): Promise<void> {
  const file = join(dir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  if (process.env.RCD_UPDATE_SCREENSHOTS === '1') {
    mkdirSync(join(ROOT, 'docs', 'console'), { recursive: true });
    copyFileSync(file, join(ROOT, 'docs', 'console', `${name}.png`));
  }
}

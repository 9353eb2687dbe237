/**
 * A page of the admin console in Chromium as the console's end-to-end tests open it: desktop size,
 * each step failing after 10 s (naming the locator it could not find), and every
 * Content-Security-Policy violation the browser reports collected, for the tests to expect none;
 * optionally in a time zone of the test's choosing (the browser's own zone, as the console sees it).
 */
import type { Browser, Page } from 'playwright-core';

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

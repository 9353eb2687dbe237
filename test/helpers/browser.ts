/**
 * Real Chromium (the Debian package) driven through playwright-core, and a page server on its own
 * port: a page served from there calls the delivery API on another origin, as a WebGL build does.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export interface PageServer {
  /** e.g. http://127.0.0.1:41234 */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves one empty HTML page at every path (scripts run in it through page.evaluate). */
export async function startPageServer(): Promise<PageServer> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>rcd test page</title>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

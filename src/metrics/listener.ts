/**
 * The metrics listener (--metrics-host, --metrics-port): GET /metrics in the Prometheus text format,
 * on its own port so it can stay on a private interface while the delivery port is public; over
 * HTTPS with --metrics-tls-cert and --metrics-tls-key (a scraper on another host). It runs
 * in the metrics thread (src/metrics/thread.ts): a scrape reads the shared arrays, nothing else.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { NodeServer, listenNodeServer } from '../runtime/node-server.js';
import type { TlsMaterial } from '../runtime/tls.js';

export interface MetricsListener {
  readonly port: number;
  /** What it serves over HTTPS, or null (plain HTTP). */
  readonly tls: TlsMaterial | null;
  /** New connections get `tls` (node:https swaps the secure context; open connections keep theirs). */
  rotateTls(tls: TlsMaterial): void;
  close(): Promise<void>;
}

export async function startMetricsListener(registry: Registry, host: string, port: number, tls: TlsMaterial | null): Promise<MetricsListener> {
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => void answer(registry, req, res);
  const node = new NodeServer(tls, onRequest, 'the metrics listener', '--metrics-tls-cert');
  const server = node.server;
  // A scraper keeps its connection alive between scrapes; the close below must not wait for it.
  server.keepAliveTimeout = 65_000;
  const bound = await listenNodeServer(server, host, port);
  return {
    port: bound,
    get tls() {
      return node.tls;
    },
    rotateTls: (next) => node.rotateTls(next),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function answer(registry: Registry, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics') {
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at /metrics\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET', 'content-type': 'text/plain' }).end('GET only\n');
    return;
  }
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

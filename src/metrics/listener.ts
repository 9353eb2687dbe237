/**
 * The metrics listener (--metrics-host, --metrics-port): GET /metrics in the Prometheus text format,
 * on its own port so it can stay on a private interface while the delivery port is public. It runs
 * in the metrics thread (src/metrics/thread.ts): a scrape reads the shared arrays, nothing else.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';

export interface MetricsListener {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMetricsListener(registry: Registry, host: string, port: number): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => void answer(registry, req, res));
  // A scraper keeps its connection alive between scrapes; the close below must not wait for it.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
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

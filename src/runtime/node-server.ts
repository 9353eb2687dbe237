/**
 * The node:http(s) listeners beside the uWS delivery loops (the admin API, the metrics endpoint):
 * created and bound the same way, so both serve HTTP/1.1 over TLS with the options of runtime/tls.ts
 * and report the port they got.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { nodeSecureContextOptions, type TlsMaterial } from './tls.js';

export interface NodeServer {
  readonly server: Server;
  /** The same server when it serves HTTPS (its secure context is what a rotation swaps), else null. */
  readonly https: HttpsServer | null;
}

/** node:https with `tls` (HTTP/1.1 by ALPN), node:http without. */
export function createNodeServer(tls: TlsMaterial | null, onRequest: (req: IncomingMessage, res: ServerResponse) => void): NodeServer {
  const https = tls === null ? null : createHttpsServer({ ...nodeSecureContextOptions(tls), ALPNProtocols: ['http/1.1'] }, onRequest);
  return { server: https ?? createServer(onRequest), https };
}

/** Binds `server`; resolves with the port it got (`port` 0: one the system chose), rejects with the bind error. */
export function listenNodeServer(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : port);
    });
  });
}

/**
 * The node:http(s) listeners beside the uWS delivery loops (the admin API, the metrics endpoint):
 * created and bound the same way, so both serve HTTP/1.1 over TLS with the options of runtime/tls.ts
 * and report the port they got.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { nodeSecureContextOptions, type TlsMaterial } from './tls.js';

/** A listener's node:http(s) server and the TLS material it serves. */
export class NodeServer {
  readonly server: Server;
  /** The same server when it serves HTTPS (its secure context is what a rotation swaps), else null. */
  private readonly https: HttpsServer | null;
  private served: TlsMaterial | null;
  /** What a rotation on plain HTTP is refused with, e.g. "the admin listener ... --admin-tls-cert". */
  private readonly plainHttp: string;

  /**
   * node:https with `tls` (HTTP/1.1 by ALPN), node:http without. `name` and `certFlag` word the
   * refusal of a rotation on plain HTTP.
   */
  constructor(tls: TlsMaterial | null, onRequest: (req: IncomingMessage, res: ServerResponse) => void, name: string, certFlag: string) {
    this.https = tls === null ? null : createHttpsServer({ ...nodeSecureContextOptions(tls), ALPNProtocols: ['http/1.1'] }, onRequest);
    this.server = this.https ?? createServer(onRequest);
    this.served = tls;
    this.plainHttp = `${name} serves plain HTTP; restart with ${certFlag} to serve HTTPS`;
  }

  /** The material served, null over plain HTTP. */
  get tls(): TlsMaterial | null {
    return this.served;
  }

  /** New connections get `next` (node:https swaps the secure context; open connections keep theirs). */
  rotateTls(next: TlsMaterial): void {
    if (this.https === null) throw new Error(this.plainHttp);
    this.https.setSecureContext(nodeSecureContextOptions(next));
    this.served = next;
  }
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

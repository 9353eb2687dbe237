/**
 * The delivery listener of one front-end loop: its uWS app (App, or SSLApp with TLS material), the
 * listen socket, and certificate rotation.
 *
 * Rotation takes a new listen socket, because this uWS build cannot change a running app's
 * certificate safely: its only run-time certificate API, addServerName/removeServerName (SNI),
 * frees the per-name router while connections made under that name still route through it (a
 * use-after-free on their next request), creates the SSL context without checking it (a bad file
 * crashes the process) and never applies to clients that send no server name. So a rotation builds
 * a second SSLApp with the new certificate and the same routes, binds it to the same port
 * (SO_REUSEPORT, which is why an HTTPS listener binds shared), then closes the old listen socket.
 * Connections already open stay on the old app, whose certificate was checked at their handshake,
 * until they end; new connections get the new certificate.
 *
 * What this costs: when the old socket closes, the kernel resets the connections it holds that uWS
 * has not accepted yet (in their TCP handshake, or queued) unless net.ipv4.tcp_migrate_req=1 (Linux
 * 5.14+) moves them to the new socket. Such a client sees a reset before its TLS handshake, so
 * before any request is sent. The swap is done in its own event-loop turn, after uWS accepted what
 * was queued, so the window is short.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import uWS from 'uWebSockets.js';
import type { AppOptions, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { TLS12_CIPHERS, type TlsMaterial } from '../runtime/tls.js';

/**
 * Apps a rotation retired, kept serving the keep-alive connections they hold (this uWS build can
 * neither count an app's connections nor ask them to close after their next answer, so an app is
 * never known to be empty). Past this many, the oldest is closed and whatever it still holds is cut:
 * a connection that outlived 16 certificate changes. Bounded because each one keeps an SSL context
 * and its session cache; a reload whose files did not change creates none.
 */
const RETIRED_APPS_KEPT = 16;

/**
 * The one place a delivery app is created: App without TLS, SSLApp with it. uWS takes certificate
 * files, not bytes, so the material (checked by src/runtime/tls.ts) is written to a private
 * temporary directory (0700, files 0600) that is removed as soon as the SSL context has read it:
 * what uWS loads is exactly what was checked, even if the operator's files change meanwhile. The key
 * is written as read, still encrypted when it was; the passphrase goes to uWS directly.
 */
export function createUwsApp(tls: TlsMaterial | null): TemplatedApp {
  if (tls === null) return uWS.App();
  const dir = mkdtempSync(join(tmpdir(), 'rcd-tls-'));
  try {
    const certFile = join(dir, 'chain.pem');
    const keyFile = join(dir, 'key.pem');
    writeFileSync(certFile, tls.chainPem, { mode: 0o600 });
    writeFileSync(keyFile, tls.keyPem, { mode: 0o600 });
    const options: AppOptions = { cert_file_name: certFile, key_file_name: keyFile, ssl_ciphers: TLS12_CIPHERS };
    if (tls.passphrase !== null) options.passphrase = tls.passphrase;
    try {
      return uWS.SSLApp(options);
    } catch (err) {
      // What node:crypto accepts and the uWS binary's BoringSSL does not (an unusual key type): uWS says only "App construction failed".
      throw new Error(`uWebSockets.js could not load certificate serial ${tls.serial} and its key (${err instanceof Error ? err.message : String(err)})`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT. By default uWS binds with SO_REUSEPORT, so a second rcd on
 * the same port starts "successfully" and the kernel splits connections between the two servers
 * (seen: two `rcd serve --port P` both printed "listening on"). Exclusive, the second start fails.
 */
const LISTEN_EXCLUSIVE_PORT = 1;
const LISTEN_SHARED_PORT = 0;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => TemplatedApp;

/** Binds synchronously (uWS calls back before listen returns); null when the address is taken or not permitted. */
function bind(app: TemplatedApp, host: string, port: number, options: number): us_listen_socket | null {
  let bound: us_listen_socket | null = null;
  // The (host, port, options, cb) form exists at run time; the package's typings omit it.
  (app.listen as unknown as ListenWithOptions).call(app, host, port, options, (socket) => {
    bound = socket === false ? null : socket;
  });
  return bound;
}

/**
 * A listener that binds shared (SO_REUSEPORT: an HTTPS one, so that a rotation can bind beside it,
 * and every listener when the process runs several delivery loops) must still not let another
 * process join the port. A plain bind (no SO_REUSEPORT) succeeds only when nothing listens there, so
 * one is made and released first: a second rcd on the port stops at start as with one plain
 * listener. Resolves with the port (the one chosen when `port` is 0: uSockets sets SO_REUSEPORT only
 * on a named port, so loops binding port 0 would not share one). A process binding the port between
 * this check and the binds is not caught (a window of about a millisecond at start-up).
 */
export function claimPort(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen({ host, port, exclusive: true }, () => {
      const address = probe.address();
      const claimed = typeof address === 'object' && address !== null ? address.port : port;
      probe.close(() => resolve(claimed));
    });
  });
}

/**
 * False when this Linux kernel resets, rather than hands to the new socket, the connections in
 * their handshake with a listen socket that rotation closes (net.ipv4.tcp_migrate_req is 0, or
 * absent before Linux 5.14). Null where it cannot be read (another OS).
 */
export function rotationMigratesHandshakes(): boolean | null {
  try {
    return readFileSync('/proc/sys/net/ipv4/tcp_migrate_req', 'utf8').trim() === '1';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' && process.platform === 'linux' ? false : null;
  }
}

export class DeliveryListener {
  private readonly retired: TemplatedApp[] = [];
  private closed = false;
  /** The material of a rotation built but not swapped in yet (the swap waits for the next turn). */
  private pending: TlsMaterial | null = null;

  private constructor(
    private readonly build: (tls: TlsMaterial | null) => TemplatedApp,
    private readonly host: string,
    readonly port: number,
    private app: TemplatedApp,
    private socket: us_listen_socket | null,
    private material: TlsMaterial | null,
  ) {}

  /**
   * Creates the app with `build` (routes on a new uWS app from createUwsApp) and binds it. Rejects
   * with a one-line reason when the port is taken or not permitted. `claimed`: the port was claimed
   * for this process already (claimPort, by the main thread for every loop); bind it shared.
   */
  static async open(
    build: (tls: TlsMaterial | null) => TemplatedApp,
    host: string,
    port: number,
    tls: TlsMaterial | null,
    claimed = false,
  ): Promise<DeliveryListener> {
    let bindPort = port;
    if (tls !== null && !claimed) {
      try {
        bindPort = await claimPort(host, port);
      } catch {
        throw new Error(`cannot listen on ${host}:${port} (the port is in use or not permitted)`);
      }
    }
    const app = build(tls);
    const socket = bind(app, host, bindPort, tls === null && !claimed ? LISTEN_EXCLUSIVE_PORT : LISTEN_SHARED_PORT);
    if (socket === null) {
      (app as unknown as { close(): void }).close();
      throw new Error(`cannot listen on ${host}:${port} (the port is in use or not permitted)`);
    }
    return new DeliveryListener(build, host, uWS.us_socket_local_port(socket), app, socket, tls);
  }

  /** The newest material: the one served, or the one a rotation is about to serve. */
  get tls(): TlsMaterial | null {
    return this.pending ?? this.material;
  }

  /**
   * Serves `tls` to new connections from the next event-loop turn on. Resolves false (nothing
   * changed) when the material is the one served already; rejects, keeping the current certificate,
   * when the new app cannot be created or bound. Only for a listener opened with TLS.
   */
  rotate(tls: TlsMaterial): Promise<boolean> {
    if (this.material === null) return Promise.reject(new Error('this listener serves plain HTTP; restart with --tls-cert to serve HTTPS'));
    if (tls.fingerprint === this.tls?.fingerprint) return Promise.resolve(false);
    // Creating the SSL context and the routes takes milliseconds; connections arriving meanwhile queue
    // on the current socket and are accepted by uWS in the next turn's poll phase, before the swap.
    let next: TemplatedApp;
    try {
      next = this.build(tls);
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    this.pending = tls;
    return new Promise((resolve, reject) => {
      // An immediate queued from an immediate runs in the next turn's check phase, after its poll.
      setImmediate(() => setImmediate(() => {
        if (this.pending === tls) this.pending = null;
        try {
          resolve(this.swap(next, tls));
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      }));
    });
  }

  private swap(next: TemplatedApp, tls: TlsMaterial): boolean {
    if (this.closed || this.socket === null) {
      (next as unknown as { close(): void }).close();
      throw new Error('the listener is stopping');
    }
    const socket = bind(next, this.host, this.port, LISTEN_SHARED_PORT);
    if (socket === null) {
      (next as unknown as { close(): void }).close();
      throw new Error(`cannot bind the new certificate's listener on ${this.host}:${this.port}`);
    }
    uWS.us_listen_socket_close(this.socket);
    this.retired.push(this.app);
    if (this.retired.length > RETIRED_APPS_KEPT) (this.retired.shift() as unknown as { close(): void }).close();
    this.app = next;
    this.socket = socket;
    this.material = tls;
    return true;
  }

  /** Stops accepting connections; open ones go on. */
  stopAccepting(): void {
    if (this.socket !== null) uWS.us_listen_socket_close(this.socket);
    this.socket = null;
  }

  /** Closes every connection, of the current app and of the ones rotation retired. */
  close(): void {
    this.closed = true;
    this.stopAccepting();
    // Present at run time in this uWS build, missing from its typings.
    for (const app of [...this.retired, this.app]) (app as unknown as { close(): void }).close();
    this.retired.length = 0;
  }
}

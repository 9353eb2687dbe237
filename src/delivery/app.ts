/**
 * The uWS application: routes and listening. No logic lives here; routes.ts has it.
 * Every path is also registered with a trailing slash (the spec writes /api/v1/combine/).
 */
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { handleCatalog, handleContent, handleHealth, handleNotFound, handleWrongMethod, handlerFailed } from './routes.js';
import { Route } from './request.js';
import type { FrontEndState } from './state.js';
import { StartupError } from '../runtime/config.js';

/** True when the native uWS addon loaded (the package silently falls back to a slow JS shim otherwise). */
export function isNativeUws(): boolean {
  return 'H3App' in (uWS as object);
}

/**
 * The one place a delivery loop's uWS app is created (every loop calls it with its own state): a TLS
 * front end creates its SSLApp here instead, and every loop gets it.
 */
export function createApp(state: FrontEndState): TemplatedApp {
  const app = uWS.App();
  // An exception escaping a uWS handler ends the process; handlerFailed contains it to the connection.
  const plain = (res: HttpResponse, req: HttpRequest): void => {
    try {
      handleContent(state, res, req, Route.Plain);
    } catch (err) {
      handlerFailed(state, res, err);
    }
  };
  const wrapped = (res: HttpResponse, req: HttpRequest): void => {
    try {
      handleContent(state, res, req, Route.Wrapped);
    } catch (err) {
      handlerFailed(state, res, err);
    }
  };
  const combine = (res: HttpResponse, req: HttpRequest): void => {
    try {
      handleContent(state, res, req, Route.Combine);
    } catch (err) {
      handlerFailed(state, res, err);
    }
  };
  const catalog = (res: HttpResponse, req: HttpRequest): void => {
    try {
      handleCatalog(state, res, req);
    } catch (err) {
      handlerFailed(state, res, err);
    }
  };
  const health = (res: HttpResponse, req: HttpRequest): void => handleHealth(state, res, req);
  const postOnly = (res: HttpResponse, req: HttpRequest): void => handleWrongMethod(state, res, req, 'POST');
  const getOnly = (res: HttpResponse, req: HttpRequest): void => handleWrongMethod(state, res, req, 'GET');
  // The method is matched by uWS's router (a method-specific route wins over `any` on the same path),
  // so a handler never asks for it: one native call and one string less per request.
  for (const suffix of ['', '/']) {
    app.post('/api/v1/config/:contentId/dynamic' + suffix, wrapped).any('/api/v1/config/:contentId/dynamic' + suffix, postOnly);
    app.post('/api/v1/config/:contentId' + suffix, plain).any('/api/v1/config/:contentId' + suffix, postOnly);
    app.post('/api/v1/combine' + suffix, combine).any('/api/v1/combine' + suffix, postOnly);
    app.get('/api/v1/env/catalog' + suffix, catalog).any('/api/v1/env/catalog' + suffix, getOnly);
    app.get('/healthz' + suffix, health).any('/healthz' + suffix, getOnly);
  }
  app.any('/*', (res: HttpResponse, req: HttpRequest) => handleNotFound(state, res, req));
  return app;
}

/**
 * uSockets' listen options. By default uWS binds with SO_REUSEPORT, so a second rcd on the same port
 * starts "successfully" and the kernel splits connections between the two servers (seen: two
 * `rcd serve --port P` both printed "listening on"). One delivery loop binds exclusively, so a second
 * start fails. Several loops of one process must all bind with SO_REUSEPORT (Linux refuses a
 * SO_REUSEPORT bind beside a socket without it) and the kernel spreads connections over them; the
 * port is first checked by an exclusive bind (reservePort), which fails while anything listens on it.
 */
const LISTEN_DEFAULT = 0;
const LISTEN_EXCLUSIVE_PORT = 1;
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => TemplatedApp;

export interface Listening {
  readonly socket: us_listen_socket;
  readonly port: number;
}

/**
 * Binds `app` on host:port; `shared` binds with SO_REUSEPORT beside the process's other delivery
 * loops, otherwise exclusively.
 */
export function listen(app: TemplatedApp, host: string, port: number, shared = false): Promise<Listening> {
  return new Promise((resolve, reject) => {
    // The (host, port, options, cb) form exists at run time; the package's typings omit it.
    (app.listen as unknown as ListenWithOptions).call(app, host, port, shared ? LISTEN_DEFAULT : LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket === false) {
        reject(new StartupError(`cannot listen on ${host}:${port} (the port is in use or not permitted)`));
        return;
      }
      resolve({ socket, port: uWS.us_socket_local_port(socket) });
    });
  });
}

/**
 * Before several loops bind host:port with SO_REUSEPORT: an exclusive bind, released at once, fails
 * while any other socket (another rcd included) listens there, and turns port 0 into a free port
 * (uSockets sets SO_REUSEPORT only on a named port: two loops binding port 0 would not share one).
 * A process binding the port between this check and the loops' binds is not caught (a window of
 * about a millisecond at start-up).
 */
export async function reservePort(host: string, port: number): Promise<number> {
  const probe = uWS.App();
  try {
    const listening = await listen(probe, host, port);
    stopListening(listening.socket);
    return listening.port;
  } finally {
    closeApp(probe);
  }
}

export function stopListening(socket: us_listen_socket): void {
  uWS.us_listen_socket_close(socket);
}

/** Closes every connection of `app` (keep-alive ones too) and its listen sockets. */
export function closeApp(app: TemplatedApp): void {
  // Present at runtime in this uWS build, missing from its typings.
  (app as unknown as { close(): void }).close();
}

/**
 * The uWS application's routes. No logic lives here; routes.ts has it. Listening, and the App or
 * SSLApp they are registered on, are listener.ts's.
 * Every path is also registered with a trailing slash (the spec writes /api/v1/combine/).
 */
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { TlsMaterial } from '../runtime/tls.js';
import { createUwsApp } from './listener.js';
import {
  handleCatalog,
  handleContent,
  handleEvents,
  handleHealth,
  handleReady,
  handleNotFound,
  handlePreflight,
  handleStreamToken,
  handleWrongMethod,
  runHandler,
} from './routes.js';
import { Route } from './content-fields.js';
import { addOfrepRoutes } from './ofrep/routes.js';
import type { FrontEndState } from './state.js';

/** True when the native uWS addon loaded (the package silently falls back to a slow JS shim otherwise). */
export function isNativeUws(): boolean {
  return 'H3App' in (uWS as object);
}

/** The routes on a new app: HTTPS with `tls`, plain HTTP without (rotation calls it again for a new certificate). */
export function createApp(state: FrontEndState, tls: TlsMaterial | null): TemplatedApp {
  const app = createUwsApp(tls);
  // Each handler that reads a request runs guarded (runHandler): a throw closes its connection only.
  const plain = (res: HttpResponse, req: HttpRequest): void => runHandler(handleContent, Route.Plain, state, res, req);
  const wrapped = (res: HttpResponse, req: HttpRequest): void => runHandler(handleContent, Route.Wrapped, state, res, req);
  const combine = (res: HttpResponse, req: HttpRequest): void => runHandler(handleContent, Route.Combine, state, res, req);
  const catalog = (res: HttpResponse, req: HttpRequest): void => runHandler(handleCatalog, undefined, state, res, req);
  const events = (res: HttpResponse, req: HttpRequest): void => runHandler(handleEvents, undefined, state, res, req);
  const streamToken = (res: HttpResponse, req: HttpRequest): void => runHandler(handleStreamToken, undefined, state, res, req);
  // The small handlers below answer through the cork path (wire/reply.ts): not worth a try/finally each.
  const health = (res: HttpResponse, req: HttpRequest): void => handleHealth(state, res, req);
  const ready = (res: HttpResponse, req: HttpRequest): void => handleReady(state, res, req);
  const postOnly = (res: HttpResponse, req: HttpRequest): void => handleWrongMethod(state, res, req, 'POST');
  const getOnly = (res: HttpResponse, req: HttpRequest): void => handleWrongMethod(state, res, req, 'GET');
  const preflightPost = (res: HttpResponse, req: HttpRequest): void => handlePreflight(state, res, req, 'POST');
  const preflightGet = (res: HttpResponse, req: HttpRequest): void => handlePreflight(state, res, req, 'GET');
  // The method is matched by uWS's router (a method-specific route wins over `any` on the same path),
  // so a handler never asks for it: one native call and one string less per request.
  for (const suffix of ['', '/']) {
    app.post('/api/v1/config/:contentId/dynamic' + suffix, wrapped).any('/api/v1/config/:contentId/dynamic' + suffix, postOnly);
    app.post('/api/v1/config/:contentId' + suffix, plain).any('/api/v1/config/:contentId' + suffix, postOnly);
    app.post('/api/v1/combine' + suffix, combine).any('/api/v1/combine' + suffix, postOnly);
    app.get('/api/v1/env/catalog' + suffix, catalog).any('/api/v1/env/catalog' + suffix, getOnly);
    app.options('/api/v1/config/:contentId/dynamic' + suffix, preflightPost).options('/api/v1/config/:contentId' + suffix, preflightPost);
    app.options('/api/v1/combine' + suffix, preflightPost).options('/api/v1/env/catalog' + suffix, preflightGet);
    app.get('/api/v1/env/events' + suffix, events).any('/api/v1/env/events' + suffix, getOnly).options('/api/v1/env/events' + suffix, preflightGet);
    app.post('/api/v1/env/events/token' + suffix, streamToken).any('/api/v1/env/events/token' + suffix, postOnly);
    app.options('/api/v1/env/events/token' + suffix, preflightPost);
    app.get('/healthz' + suffix, health).any('/healthz' + suffix, getOnly);
    app.get('/readyz' + suffix, ready).any('/readyz' + suffix, getOnly);
  }
  addOfrepRoutes(app, state, postOnly, preflightPost);
  app.any('/*', (res: HttpResponse, req: HttpRequest) => handleNotFound(state, res, req));
  return app;
}

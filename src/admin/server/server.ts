/**
 * The admin listener. It runs on node:http, not uWebSockets.js: the management plane is not the hot
 * path (a handful of calls per minute from a console or a script), and node:http gives us
 * streaming bodies with back-pressure and simple lifecycle handling for free. It must never share
 * the public port. It runs on the control thread (src/control/thread.ts), never on a delivery event
 * loop: a store locked elsewhere delays only the admin calls, which answer 503 store_busy once the
 * store's busy timeout (--store-busy-timeout) has passed.
 *
 * Every successful change follows the same order before the answer is sent:
 *   store write (one transaction, change log included) -> onChange() (every delivery loop of this
 *   process applies the change, then every live node of the store, bounded by --propagation-timeout)
 *   -> audit entry -> the write's webhook deliveries released (they were added to the outbox by the
 *   store write, held until now) and sent in the background (webhooks.ts).
 * Writes are serialised so a 2xx always means "the next delivery request sees this write".
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { RcdError } from '../../runtime/errors.js';
import type { Store } from '../../store/types.js';
import type { Propagation } from '../../control/nodes.js';
import { NodeServer, listenNodeServer } from '../../runtime/node-server.js';
import type { TlsMaterial } from '../../runtime/tls.js';
import { readBody, sendError, sendJson } from './admin-http.js';
import { Lane, WriteQueue } from './write-queue.js';
import {
  ADMIN_ROUTES,
  INLINE_IMPORTS,
  type AdminCall,
  type AdminContext,
  type AdminHandler,
  type AdminPrepare,
  type ImportPreparer,
} from './handlers.js';
import { adminTokenDigest, BOOTSTRAP_TOKEN_NAME, NAMED_TOKEN_PREFIX } from './token-handlers.js';
import { authorise, type Principal, type RouteScope, type TokenRole } from './access.js';
import { compileRouter, type Router } from './router.js';
import type { AdminStateStore } from './state.js';
import { adminTokenId, normaliseToken, tokenMatcher } from '../token.js';
import { isOpenApiPath, serveOpenApi } from './openapi-routes.js';
import { serveConsole } from '../console/assets.js';
import { WebhookDispatcher, type WebhookDispatcherOptions, type WebhookStats } from './webhooks.js';
import { SAME_PRIORITY, type BulkRunner } from '../../runtime/priority.js';
import { DEFAULT_SCHEDULER_OPTIONS, Scheduler, type SchedulerOptions, type WriteOutcome } from './scheduler.js';
import { DEFAULT_PREVIEW_LIMITS, PreviewGate, type PreviewLimits } from './preview-gate.js';
import { LazyExposureReader, type ExposureSource } from '../../exposures/reader.js';
import { AdminEvents, isEventsPath, openEventStream, type AdminStreamLimits } from './admin-events.js';
import { COMMENT_HEADER, commentOf, withComment } from './audit-comment.js';

export const DEFAULT_ADMIN_MAX_BODY = 10 * 1024 * 1024;

export interface AdminServerOptions {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  readonly store: Store;
  readonly state: AdminStateStore;
  /** Makes the store's current state live for delivery; awaited before a write answers. */
  readonly onChange: () => Promise<Propagation | null>;
  /**
   * Makes the store's current state live in this process only, without waiting for the other nodes:
   * what a write of several transactions calls between them (ScheduleContext.publish). Absent: nothing.
   */
  readonly publishLocal?: () => Promise<unknown>;
  readonly log: (line: string) => void;
  /** Largest request body accepted (bundles, content). Default 10 MiB. */
  readonly maxBodyBytes?: number;
  readonly webhooks?: WebhookDispatcherOptions;
  /** HTTPS with this material (checked by src/runtime/tls.ts); plain HTTP when null or absent. */
  readonly tls?: TlsMaterial | null;
  /** Where an import's body is parsed and checked; in the calling thread when absent. */
  readonly imports?: ImportPreparer;
  /** How an import's or sync's write runs; at the caller's priority when absent. */
  readonly bulk?: BulkRunner;
  /** Scheduled changes: their bounds, this node's id (the applier's lease), the metrics. */
  readonly schedules?: SchedulerOptions;
  /** Bounds of previews at a time (preview-gate.ts); DEFAULT_PREVIEW_LIMITS when absent. */
  readonly previews?: PreviewLimits;
  /** The exposure database the experiments' readout reads (opened at the first read); none recorded when null or absent. */
  readonly exposures?: ExposureSource | null;
  /** The event stream's bounds (admin-events.ts); DEFAULT_ADMIN_STREAMS when absent. */
  readonly streams?: AdminStreamLimits;
}

export const DEFAULT_ADMIN_STREAMS: AdminStreamLimits = { maxStreams: 100, heartbeatMs: 15_000 };

export interface AdminServer {
  readonly port: number;
  /** The material served, null over plain HTTP. */
  readonly tls: TlsMaterial | null;
  /** New connections get `tls` (node:https swaps the secure context; open connections keep theirs). */
  rotateTls(tls: TlsMaterial): void;
  close(): Promise<void>;
  webhookStats(): WebhookStats;
}

interface Shared {
  readonly ctx: AdminContext;
  readonly router: Router<AdminRouteEntry>;
  readonly matches: (presented: string) => boolean;
  readonly bootstrap: Principal;
  readonly maxBody: number;
  readonly onChange: () => Promise<Propagation | null>;
  readonly log: (line: string) => void;
  readonly state: AdminStateStore;
  readonly dispatcher: WebhookDispatcher;
  readonly writes: WriteQueue;
  readonly events: AdminEvents;
}

interface AdminRouteEntry {
  readonly handler: AdminHandler;
  readonly prepare: AdminPrepare | null;
  readonly write: boolean;
  readonly urgent: boolean;
  readonly role: TokenRole;
  readonly scope: RouteScope;
}

/** Who applies scheduled changes: the change itself is audited in its creator's name. */
const SCHEDULER: Principal = { name: 'scheduler', tokenId: 'scheduler', role: 'admin', scope: '*', bootstrap: false };

const ACTOR_RE = /^[A-Za-z0-9_.@:-]{1,64}$/;
export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const dispatcher = new WebhookDispatcher(opts.store, opts.state, { log: opts.log, ...opts.webhooks });
  const scheduleOptions = opts.schedules ?? DEFAULT_SCHEDULER_OPTIONS;
  let scheduler: Scheduler | null = null;
  const shared: Shared = {
    ctx: {
      store: opts.store,
      state: opts.state,
      unguardedStore: opts.store,
      outboxHoldMs: dispatcher.holdMs,
      allowPrivateWebhooks: opts.webhooks?.allowPrivateTargets ?? false,
      imports: opts.imports ?? INLINE_IMPORTS,
      bulk: opts.bulk ?? SAME_PRIORITY,
      schedules: { limits: scheduleOptions.limits, kick: () => scheduler?.kick(), publish: () => publishSoon(opts.publishLocal) },
      previews: new PreviewGate(opts.previews ?? DEFAULT_PREVIEW_LIMITS),
      exposures: opts.exposures === undefined || opts.exposures === null ? null : new LazyExposureReader(opts.exposures),
    },
    router: compileRouter(
      ADMIN_ROUTES.map((r) => ({
        method: r.method,
        pattern: r.pattern,
        handler: { handler: r.handler, prepare: r.prepare, write: r.write, urgent: r.urgent, role: r.role, scope: r.scope },
      })),
    ),
    matches: tokenMatcher(opts.token),
    bootstrap: { name: BOOTSTRAP_TOKEN_NAME, tokenId: adminTokenId(opts.token), role: 'admin', scope: '*', bootstrap: true },
    maxBody: opts.maxBodyBytes ?? DEFAULT_ADMIN_MAX_BODY,
    onChange: opts.onChange,
    log: opts.log,
    state: opts.state,
    dispatcher,
    writes: new WriteQueue(),
    events: new AdminEvents(opts.state, opts.streams ?? DEFAULT_ADMIN_STREAMS, opts.log),
  };
  scheduler = new Scheduler(opts.store, scheduleOptions, opts.log, (handler) => runSystemWrite(shared, handler));
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handleRequest(shared, req, res).catch((err: unknown) => {
      opts.log(`admin: failed to answer ${req.method} ${req.url}: ${(err as Error).message}`);
      res.destroy();
    });
  };
  const node = new NodeServer(opts.tls ?? null, onRequest, 'the admin listener', '--admin-tls-cert');
  const server = node.server;
  // Slow clients must not pin sockets forever, but bundle uploads can legitimately take a while.
  server.requestTimeout = 120_000;
  server.headersTimeout = 30_000;
  const port = await listenNodeServer(server, opts.host, opts.port);
  // What an earlier process left in the outbox is resumed now, and changes that fell due meanwhile applied.
  dispatcher.start();
  scheduler.start();
  let closing: Promise<void> | null = null;
  return {
    port,
    get tls() {
      return node.tls;
    },
    rotateTls: (next) => node.rotateTls(next),
    webhookStats: () => dispatcher.stats(),
    close(): Promise<void> {
      if (closing === null) {
        closing = (async () => {
          // First: its lease released, another node of the store applies what falls due from now on.
          await scheduler?.close();
          // Open event streams end with a `closing` event: the server does not wait for them.
          shared.events.close();
          const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
          server.closeIdleConnections();
          // In-flight admin calls get a moment to finish; then the remaining sockets are cut.
          const timer = setTimeout(() => server.closeAllConnections(), 2000);
          await stopped;
          clearTimeout(timer);
          await dispatcher.close();
          await shared.ctx.exposures?.close();
        })();
      }
      return closing;
    },
  };
}

async function handleRequest(shared: Shared, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // The console's files are public and served before authentication; its calls come back here.
  if (serveConsole(req, res, shared.log)) return;
  if (isOpenApiPath(req.url)) {
    await serveOpenApi(req, res);
    return;
  }
  try {
    const presented = bearerToken(req.headers.authorization);
    if (presented === null) throw new RcdError('unauthorized', 'missing Authorization: Bearer <admin token>');
    const principal = await principalOf(shared, presented);

    const url = new URL(req.url ?? '/', 'http://admin.invalid');
    if (isEventsPath(url.pathname)) {
      await openEventStream(shared.events, req.method ?? 'GET', url.searchParams, res, principal, principal.bootstrap ? null : adminTokenDigest(presented));
      return;
    }
    const { handler: entry, params } = shared.router.match(req.method ?? 'GET', url.pathname);
    authorise(principal, entry.role, entry.scope, params[0]);
    const body = await readBody(req, shared.maxBody);
    const call: AdminCall = { params, query: url.searchParams, body, principal, actor: actorOf(req, principal), comment: entry.write ? commentOf(req.headers[COMMENT_HEADER]) : null, announced: [] };
    if (!entry.write) {
      const result = await entry.handler(shared.ctx, call);
      sendJson(res, result.status, result.body, null);
      return;
    }
    const handler = entry.prepare === null ? entry.handler : await entry.prepare(shared.ctx, call);
    const { result, propagation, unpublished } = await shared.writes.run(() => runWrite(shared, handler, call), entry.urgent ? Lane.Urgent : Lane.Normal);
    // Committed and audited, but not published: answered as the store's failure, as before the commit.
    if (unpublished !== null) throw unpublished;
    sendJson(res, result.status, result.body, propagation);
  } catch (err) {
    sendError(shared.log, res, err);
  }
}

const BEARER = /^bearer +(\S.*)$/i;

/**
 * The token of an `Authorization: Bearer <token>` header value, or null when there is none.
 * RFC 9110 makes the scheme case-insensitive and allows more than one space after it; the token
 * is normalised exactly like the configured one (normaliseToken), so both sides follow one rule.
 */
export function bearerToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  // A field value excludes surrounding whitespace (RFC 9110); node strips it already, other callers may not.
  const m = BEARER.exec(header.trim());
  if (m === null) return null;
  const token = normaliseToken(m[1] as string);
  return token === '' ? null : token;
}

/**
 * The bootstrap token, or the live named token whose digest matches (looked up in the store on
 * every call, so a revocation made through any node holds everywhere at once). Only a token of
 * the named form is looked up: a mistyped bootstrap token costs no store read.
 */
async function principalOf(shared: Shared, presented: string): Promise<Principal> {
  if (shared.matches(presented)) return shared.bootstrap;
  if (presented.startsWith(NAMED_TOKEN_PREFIX)) {
    const info = await shared.state.findToken(adminTokenDigest(presented));
    if (info !== undefined) return { name: info.name, tokenId: info.id, role: info.role, scope: info.environments, bootstrap: false };
  }
  throw new RcdError('unauthorized', 'invalid admin token');
}

/**
 * A named token is its name in the audit log, whatever the client declares; the bootstrap token
 * may declare a label (the CLI says "cli"), else it is `token:<id>`.
 */
function actorOf(req: IncomingMessage, principal: Principal): string {
  if (!principal.bootstrap) return principal.name;
  const declared = req.headers['x-rcd-actor'];
  if (typeof declared === 'string' && ACTOR_RE.test(declared)) return declared;
  return `token:${principal.tokenId}`;
}

/**
 * Starts this process's publication of what is committed and returns at once. A failure is left to
 * the write's own onChange at its end, which publishes the same changes again and reports it.
 */
function publishSoon(publishLocal: (() => Promise<unknown>) | undefined): void {
  if (publishLocal !== undefined) publishLocal().catch(() => undefined);
}

/** A write the server makes itself (scheduled changes that fell due), through the same path as an admin call's. */
function runSystemWrite(shared: Shared, handler: AdminHandler): Promise<WriteOutcome> {
  const call: AdminCall = { params: [], query: new URLSearchParams(), body: Buffer.alloc(0), principal: SCHEDULER, actor: SCHEDULER.name, comment: null, announced: [] };
  return shared.writes.run(() => runWrite(shared, handler, call), Lane.Urgent);
}

async function runWrite(shared: Shared, handler: AdminHandler, call: AdminCall): Promise<WriteOutcome> {
  // Store writes check the store's files themselves; this covers the admin state's writes (webhooks,
  // audit) too, which share the database file through their own connection.
  requireDurableStore(shared.ctx.store);
  const result = await handler(writeContext(shared.ctx, call.principal), call);
  const change = result.change;
  if (change === null) {
    // A write that changed nothing announces nothing; anything it did add still goes out.
    await releaseDeliveries(shared, call.announced);
    return { result, propagation: null, unpublished: null };
  }
  // Committed: from here nothing throws before the audit entry is written. A store that fails a
  // moment after the commit (a database coming back from an outage refuses some connections while
  // it accepts others) stops this node's publication, not the change: the nodes apply it from the
  // change log once the store answers. A scheduled change that fell due is settled by its commit and
  // never runs again: its audit entry is written here or nowhere.
  let propagation: Propagation | null = null;
  let unpublished: Error | null = null;
  if (change.live) {
    try {
      propagation = await shared.onChange();
    } catch (err) {
      unpublished = err instanceof Error ? err : new Error(String(err));
    }
  }
  const own = result.audits ?? [{ actor: call.actor, tokenId: call.principal.tokenId, action: change.action, env: change.env, target: change.target, detail: change.detail }];
  const entries = withComment(own, call.comment, call.actor, call.principal.tokenId);
  try {
    await shared.state.appendAudits(entries);
    // The event stream sends what the audit log holds: now, not at its next read.
    shared.events.kick();
  } catch (err) {
    // The change is committed and live; refusing the answer now would invite a duplicate retry.
    shared.log(`admin: audit entry for ${change.action} not written: ${(err as Error).message}`);
  }
  for (const e of entries) shared.log(`admin: ${e.actor} ${e.action}${e.env === null ? '' : ' env=' + e.env}${e.target === null ? '' : ' target=' + e.target}`);
  // Unpublished, the webhooks stay held: they fall due when their hold ends, as after a writer's crash.
  if (unpublished === null) await releaseDeliveries(shared, call.announced);
  return { result, propagation, unpublished };
}

/**
 * The write's webhook deliveries are in the outbox, held until now: the change is live, so they are
 * made due and the dispatcher kicked. If the release fails they stay held and fall due when the
 * hold ends; the write itself is committed and answers as such.
 */
async function releaseDeliveries(shared: Shared, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  try {
    await shared.ctx.store.releaseOutbox(ids, Date.now());
  } catch (err) {
    shared.log(`admin: webhook deliveries not released (sent when their hold ends): ${(err as Error).message}`);
  }
  shared.dispatcher.kick();
}

/**
 * What a write's handler writes through: for a named token, the store and the admin state as views
 * that check the token again inside each write's transaction (src/store/write-guard.ts), so a token
 * revoked after its call was authorised (its body still arriving, or its write queued) writes
 * nothing. The bootstrap token cannot be revoked; the scheduler writes in its creators' names.
 */
function writeContext(ctx: AdminContext, principal: Principal): AdminContext {
  if (principal.bootstrap || principal === SCHEDULER) return ctx;
  const guard = { tokenId: principal.tokenId };
  return { ...ctx, store: ctx.store.guarded(guard), state: ctx.state.guarded(guard) };
}

function requireDurableStore(store: Store): void {
  const reason = store.unavailableReason();
  if (reason !== null) {
    throw new RcdError('store_unavailable', `the store is unavailable (${reason}); writes are refused meanwhile`);
  }
}

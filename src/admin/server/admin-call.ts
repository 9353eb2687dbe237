/**
 * What every admin operation is made of: the context and the call a handler gets, the result it
 * gives back (an answer, and the change the server makes live, audits and announces), the route
 * table's rows, and the helpers handlers share. Handlers never touch HTTP objects; they take
 * decoded params, the query and the raw body.
 */
import { RcdError } from '../../runtime/errors.js';
import { parseJsonBytes } from '../../shared/json-body.js';
import { isPlainObject } from '../../shared/json.js';
import { settle } from '../../shared/settle.js';
import { prepareImport } from '../../store/bundle/bundle.js';
import type { PreparedImport } from '../../store/import-plan.js';
import type { ChangeEntry, OutboxOf, RoutingDelta, Store } from '../../store/types.js';
import type { ScheduleLimits } from '../../store/schedule/limits.js';
import type { BulkRunner } from '../../runtime/priority.js';
import type { ExposureReader } from '../../exposures/db.js';
import type { Route } from './router.js';
import type { Principal, RouteScope, TokenRole } from './access.js';
import type { PreviewGate } from './preview-gate.js';
import type { AdminStateStore, NewAuditEntry } from './state.js';
import { outboxEntries, type WebhookPayload } from './webhooks.js';

export interface AdminContext {
  /**
   * In a write made with a named token, a view whose writes check in their transaction that the
   * token is still live (Store.guarded, src/store/write-guard.ts); the store itself otherwise.
   */
  readonly store: Store;
  /** As `store`: the admin state, its writes checked the same way in a named token's write. */
  readonly state: AdminStateStore;
  /** The store without that check: what a revocation does after the token is revoked (its own caller's included). */
  readonly unguardedStore: Store;
  /** How long a write's webhook deliveries are held if the server never releases them (OutboxOf.holdMs). */
  readonly outboxHoldMs: number;
  /** Webhooks may target addresses that are not public (--webhook-allow-private, webhook-target.ts). */
  readonly allowPrivateWebhooks: boolean;
  readonly imports: ImportPreparer;
  /** Where an import's or a sync's write runs: at a lower CPU priority than delivery where it may. */
  readonly bulk: BulkRunner;
  readonly schedules: ScheduleContext;
  /** Previews at a time (`preview?at=`) and what each replays. */
  readonly previews: PreviewGate;
  /** The exposure database's counts (opened at the first read), or null when the server records no exposures. */
  readonly exposures: ExposureReader | null;
}

export interface ScheduleContext {
  readonly limits: ScheduleLimits;
  /** A change was scheduled or moved here: the applier looks at the next due time now, not at its next poll. */
  kick(): void;
  /**
   * A write of several transactions committed one of them: this node starts making it live now,
   * while the next is written (the other nodes follow the store on their own). The write still
   * waits for every node at its end, as every write does.
   */
  publish(): void;
}

/**
 * Turns an import's body into a PreparedImport (or throws its RcdError: invalid_json,
 * invalid_bundle, ...). The control thread hands big bodies to a thread of lower priority
 * (src/control/import-pool.ts); INLINE_IMPORTS does it in the calling thread.
 */
export interface ImportPreparer {
  prepare(body: Uint8Array): Promise<PreparedImport>;
}

export const INLINE_IMPORTS: ImportPreparer = {
  prepare: (body) => settle(() => prepareImport(parseJsonBytes(body))),
};

export interface AdminCall {
  readonly params: readonly string[];
  readonly query: URLSearchParams;
  readonly body: Buffer;
  /** Who calls, already authorised for the route (access.ts). */
  readonly principal: Principal;
  /** What the audit log records as the actor of this call. */
  readonly actor: string;
  /** The person's comment on this write (X-Rcd-Comment, audit-comment.ts), stored in its audit entries; null: none. */
  readonly comment: string | null;
  /** Ids of the webhook deliveries the write added to the outbox: released once the change is live. */
  readonly announced: string[];
}

export interface AdminChange {
  /** True when routing data changed: the server runs onChange() before answering. */
  readonly live: boolean;
  readonly action: string;
  readonly env: string | null;
  readonly target: string | null;
  readonly detail: unknown;
}

export interface AdminResult {
  readonly status: number;
  readonly body: unknown;
  /** null when nothing changed (reads, and writes that found the state already as asked). */
  readonly change: AdminChange | null;
  /**
   * The audit entries, when not the one `change` describes in the caller's name: scheduled changes
   * applied are audited per op in the name of the token that scheduled each.
   */
  readonly audits?: readonly NewAuditEntry[];
}

export type AdminHandler = (ctx: AdminContext, call: AdminCall) => Promise<AdminResult>;

/** A write's work that needs no store, done before it joins the write queue; returns the handler that writes. */
export type AdminPrepare = (ctx: AdminContext, call: AdminCall) => Promise<AdminHandler>;

export interface AdminRoute extends Route<AdminHandler> {
  /** Writes run one at a time so "the next request sees it" holds even for concurrent writers. */
  readonly write: boolean;
  /**
   * When set, the server awaits it outside the write queue and runs the handler it returns in the
   * queue: an 8 MiB bundle's parsing and checking must not hold up the single writes behind it.
   * `handler` is the two in one.
   */
  readonly prepare: AdminPrepare | null;
  /** Runs before writes queued earlier (after the one running): the kill switch. */
  readonly urgent: boolean;
  /** The least role that may call it. */
  readonly role: TokenRole;
  readonly scope: RouteScope;
}


export function read(body: unknown, status = 200): AdminResult {
  return { status, body, change: null };
}

export function changed(status: number, body: unknown, change: AdminChange): AdminResult {
  return { status, body, change };
}

export function param(call: AdminCall, index: number): string {
  return call.params[index] as string;
}

export function parseJsonBody(call: AdminCall): unknown {
  return parseJsonBytes(call.body);
}

/**
 * Throws invalid_body when `body` has a member not in `known`. An admin body's unknown member (a
 * typo such as `Rule`, a field of another route) is refused, never ignored: ignored, it changes
 * what the call does (a kill without its rule disables every rule). `at` names the object in the
 * message (`steps[0]`), empty for the body itself.
 */
export function refuseUnknownFields(body: Record<string, unknown>, known: readonly string[], at = ''): void {
  for (const name of Object.keys(body)) {
    if (!known.includes(name)) {
      const where = at === '' ? '' : ` in ${at}`;
      throw new RcdError('invalid_body', `unknown field ${JSON.stringify(name)}${where}; known: ${known.join(', ')}`, { field: at === '' ? name : `${at}.${name}` });
    }
  }
}

/** The body as a JSON object of the members in `known` (each optional here), else invalid_body naming `shape`. */
export function parseBodyObject(call: AdminCall, shape: string, known: readonly string[]): Record<string, unknown> {
  const body = parseJsonBody(call);
  if (!isPlainObject(body)) throw new RcdError('invalid_body', `the body must be ${shape}`);
  refuseUnknownFields(body, known);
  return body;
}

/** A route that takes no body: none, or an empty JSON object; anything else is invalid_body. */
export function requireNoBody(call: AdminCall): void {
  if (call.body.length > 0) parseBodyObject(call, 'empty (this call takes no body)', []);
}

export function positiveInt(query: URLSearchParams, name: string, fallback: number | undefined): number | undefined {
  const raw = query.get(name);
  if (raw === null) return fallback;
  if (!/^[1-9]\d{0,9}$/.test(raw)) throw new RcdError('invalid_query', `${name} must be a positive integer`);
  return Number(raw);
}

export function now(): string {
  return new Date().toISOString();
}


/**
 * What a write adds to the webhook outbox, in its own transaction: one entry per payload and hook
 * subscribed to its event (the hooks as registered before the write; writes are serialised). The
 * ids are kept on the call so the server releases them once the change is live.
 */
export async function announcing<R>(
  ctx: AdminContext,
  call: AdminCall,
  payloads: (result: R, after: RoutingDelta['contents']) => readonly WebhookPayload[],
  contents?: readonly ChangeEntry[],
): Promise<OutboxOf<R>> {
  const hooks = await ctx.state.listWebhookInfo();
  return {
    contents,
    holdMs: ctx.outboxHoldMs,
    build(result, after) {
      if (hooks.length === 0) return [];
      const entries = outboxEntries(hooks, payloads(result, after));
      for (const e of entries) call.announced.push(e.id);
      return entries;
    },
  };
}

export function route(
  method: string,
  pattern: string,
  handler: AdminHandler,
  write: boolean,
  role: TokenRole,
  scope: RouteScope,
  prepare: AdminPrepare | null = null,
  urgent = false,
): AdminRoute {
  return { method, pattern, handler, write, role, scope, prepare, urgent };
}


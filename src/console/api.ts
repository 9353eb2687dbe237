/**
 * Every call the console makes: the admin API on the same origin, with the admin token from the
 * session. Errors arrive in the API's envelope and are raised as ApiError with its stable code.
 */

import type { ScheduleStatus } from './schedule-types.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }
}

/**
 * The token lives in sessionStorage: it survives a reload of the tab (a console must not sign out
 * on F5) but not the tab itself, and other tabs and origins cannot read it. localStorage would keep
 * a full-power credential on disk after the browser closes; a cookie would be sent automatically
 * and invite cross-site request forgery against an API that authenticates by header only.
 */
const TOKEN_KEY = 'rcd.adminToken';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

/** Audit entries name the console as the actor of its changes. */
const ACTOR = 'console';

export async function api<T>(method: string, path: string, body?: string | object, token: string | null = storedToken(), extra: Record<string, string> = {}): Promise<T> {
  const headers: Record<string, string> = { 'x-rcd-actor': ACTOR, ...extra };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    headers['content-type'] = typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  }
  const res = await fetch(`/admin/v1/${path}`, init);
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    json = null;
  }
  if (!res.ok) {
    const err = (json as { error?: { code?: string; message?: string; details?: unknown } } | null)?.error;
    throw new ApiError(res.status, err?.code ?? 'http_' + res.status, err?.message ?? text, err?.details);
  }
  // A preview is a POST that writes nothing.
  if (method !== 'GET' && !/\/preview(\?|$)/.test(path)) for (const l of writeListeners) l();
  return json as T;
}

const writeListeners = new Set<() => void>();

/** Called after each write of the console that succeeded (the live screens re-read at once, parts/live-events.ts). */
export function onWrite(listener: () => void): void {
  writeListeners.add(listener);
}

/**
 * A write with the person's comment for the audit log (the X-Rcd-Comment header, percent-encoded
 * UTF-8; docs/admin.md "Audit log"); an empty comment sends none.
 */
export function apiWrite<T>(method: string, path: string, comment: string, body?: string | object): Promise<T> {
  const text = comment.trim();
  return api<T>(method, path, body, storedToken(), text === '' ? {} : { 'x-rcd-comment': encodeURIComponent(text) });
}

/** A path segment (environment or content id). */
export function seg(s: string): string {
  return encodeURIComponent(s);
}

export interface Environment {
  id: string;
  createdAt: string;
  contentCount: number;
  keyCount: number;
}

export interface ContentSummary {
  id: string;
  hash: string;
  revisionCount: number;
  hasMapping: boolean;
  updatedAt: string;
}

export interface Revision {
  revId: number;
  number: number;
  hash: string;
  minAppVersion: string | null;
  createdAt: string;
  text: string;
}

export interface ContentDetail {
  id: string;
  envId: string;
  revisions: Revision[];
  mapping: Mapping | null;
  createdAt: string;
  updatedAt: string;
}

export interface Variant {
  name: string;
  mod: [number, number];
  info?: string;
}

export interface Rule {
  segment: string;
  variants?: Variant[];
}

export interface Mapping {
  rules: Rule[];
}

export interface MappingProblem {
  rule: number | null;
  path: string;
  reason: string;
}

export interface PreviewRule {
  index: number;
  segment: string;
  applied: boolean;
  variant: string | null;
  /** `"disabled": true` in the mapping (the kill switch). */
  disabled: boolean;
}

export interface Preview {
  answerText: string;
  answer: unknown;
  uid: number;
  mod: number;
  revision: number;
  hash: string;
  seg: { n: string; v: string | null; i?: string }[];
  rules: PreviewRule[];
}

export interface PlanSide {
  id: string;
  revision: number;
  hash: string;
  text: string;
  minAppVersion: string | null;
  mapping: unknown;
}

export interface PlanItem {
  id: string;
  action: 'created' | 'updated' | 'unchanged';
  hash: string;
  from: PlanSide;
  to: PlanSide | null;
}

export interface Key {
  id: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  createdAt: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  tokenId: string;
  action: string;
  env: string | null;
  target: string | null;
  detail: unknown;
}

export type { Rollout, RolloutStep, ScheduleStatus } from './schedule-types.js';

/** A scheduled change as the admin API answers it (docs/schedule.md). */
export interface Schedule {
  id: string;
  env: string;
  at: string;
  status: ScheduleStatus;
  items: string[];
  ops: ({ op: string; id?: string; to?: string | number; bytes?: number } & Record<string, unknown>)[];
  note: string;
  rollout: { id: string; step: number | null } | null;
  createdAt: string;
  createdBy: string;
  settledAt: string | null;
  lateMs: number | null;
  error: { code: string; message: string } | null;
  cancelReason: string | null;
}

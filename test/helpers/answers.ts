/**
 * rcd's JSON answers as the tests read them, typed instead of `any`: the error body every listener
 * sends, the admin API's answers (their element types are src's own), bundles and the delivery wrap.
 *
 * Every field is optional because one type covers every answer: a test that reads a field its
 * answer lacks gets undefined, and the assertion on it fails with the value it wanted beside it.
 */
import type { AuditEntry, WebhookInfo } from '../../src/admin/server/state.js';
import type { Bundle } from '../../src/store/bundle/bundle.js';
import type { ContentSummary, EnvironmentInfo, ImportReport, RevisionDetail, SyncReport } from '../../src/store/types.js';

/** `{"error": {...}}`, the body of every refusal (docs/api.md, docs/admin.md). */
export interface ErrorBody {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly details?: unknown;
}

export interface Answer extends Partial<ImportReport> {
  readonly error?: ErrorBody;
  // Admin API: single-object answers (created, put, deleted, revoked, rolled back, mapped).
  readonly id?: string;
  readonly key?: string;
  readonly secret?: string;
  readonly url?: string;
  readonly hash?: string;
  readonly revision?: number;
  readonly changed?: boolean;
  readonly created?: boolean;
  readonly deleted?: boolean;
  readonly mappingId?: number;
  readonly ruleCount?: number;
  readonly revisions?: readonly RevisionDetail[];
  readonly mapping?: unknown;
  // Admin API: lists and reports.
  readonly environments?: readonly EnvironmentInfo[];
  readonly keys?: readonly { readonly id: string; readonly createdAt: string; readonly lastUsedAt: string | null; readonly revokedAt: string | null }[];
  readonly content?: readonly ContentSummary[];
  readonly items?: SyncReport['items'];
  readonly entries?: readonly AuditEntry[];
  readonly webhooks?: readonly WebhookInfo[];
  // Delivery: the wrapped answer of /dynamic and combine with dynamic=true.
  readonly data?: unknown;
  readonly meta?: { readonly seg: readonly { readonly n: string; readonly v: string | null }[] };
}

/** The parsed answer; an empty body reads as an answer without fields. */
export function parseAnswer(text: string): Answer {
  return text === '' ? {} : (JSON.parse(text) as Answer);
}

/** The parsed answer of an export (`GET /admin/v1/export`, `rcd export`): the bundle format. */
export function parseBundle(text: string): Bundle {
  return JSON.parse(text) as Bundle;
}

/** A field a test goes on to use (an id or key for the next call): its absence fails here, by name. */
export function field<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new Error(`the answer has no ${name}`);
  return value;
}

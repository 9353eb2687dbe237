/**
 * Rows both stores read (SQLite and PostgreSQL share the schema of these tables) and how they become
 * the Store contract's objects: one definition for src/store/sqlite/* and src/store/postgres/*, so
 * the two stores cannot drift.
 */
import type { ContentRow, RevisionRow } from './sqlite/sql.js';
import type { ContentDetail, ContentMeta, ContentSummary, EnvironmentInfo, KeyInfo, OutboxEntry, RevisionMeta } from './types.js';

export interface RevisionMetaRow {
  content_pk: number;
  rev_id: number;
  number: number;
  hash: string;
  min_app_version: string | null;
  created_at: string;
}

export type ContentMetaRow = ContentRow & { rule_count: number | null };

/** A content row with its mapping's rule count: `SELECT ${CONTENT_COLUMNS} [WHERE|JOIN …]`. */
export const CONTENT_COLUMNS = `c.content_pk, c.env_id, c.id_lower, c.id, c.mapping_id, c.created_at, c.updated_at, m.rule_count
         FROM contents c LEFT JOIN mappings m ON m.mapping_id = c.mapping_id`;
/** A revision's metadata (no text): `SELECT ${REVISION_COLUMNS} [WHERE …]`. */
export const REVISION_COLUMNS = 'content_pk, rev_id, number, hash, min_app_version, created_at FROM revisions';

/** A CONTENT_COLUMNS row read raw (an array, columns in the order CONTENT_COLUMNS selects them). */
export type ContentMetaTuple = [
  contentPk: number,
  envId: string,
  idLower: string,
  id: string,
  mappingId: number | null,
  createdAt: string,
  updatedAt: string,
  ruleCount: number | null,
];

/** A REVISION_COLUMNS row read raw. */
export type RevisionMetaTuple = [contentPk: number, revId: number, number: number, hash: string, minAppVersion: string | null, createdAt: string];

/** contentMeta of a raw row. */
export function contentMetaOfTuple(c: ContentMetaTuple, revisions: RevisionMeta[]): ContentMeta {
  return {
    envId: c[1],
    id: c[3],
    idLower: c[2],
    revisions,
    mappingId: c[4],
    mappingRuleCount: c[7] ?? 0,
    createdAt: c[5],
    updatedAt: c[6],
  };
}

/** revisionMeta of a raw row. */
export function revisionMetaOfTuple(r: RevisionMetaTuple): RevisionMeta {
  return { revId: r[1], number: r[2], hash: r[3], minAppVersion: r[4], createdAt: r[5] };
}

export function contentMeta(c: ContentMetaRow, revisions: RevisionMeta[]): ContentMeta {
  return {
    envId: c.env_id,
    id: c.id,
    idLower: c.id_lower,
    revisions,
    mappingId: c.mapping_id,
    mappingRuleCount: c.rule_count ?? 0,
    createdAt: c.created_at,
    updatedAt: c.updated_at,
  };
}

export function revisionMeta(r: RevisionMetaRow): RevisionMeta {
  return { revId: r.rev_id, number: r.number, hash: r.hash, minAppVersion: r.min_app_version, createdAt: r.created_at };
}

/** One content item as the admin API shows it: every revision with its text, and the current mapping. */
export function contentDetail(content: ContentRow, revisions: readonly RevisionRow[], mappingJson: string | undefined): ContentDetail {
  return {
    id: content.id,
    envId: content.env_id,
    revisions: revisions.map((r) => ({
      revId: r.rev_id,
      number: r.number,
      hash: r.hash,
      minAppVersion: r.min_app_version,
      createdAt: r.created_at,
      text: r.text,
    })),
    mapping: mappingJson === undefined ? null : (JSON.parse(mappingJson) as unknown),
    createdAt: content.created_at,
    updatedAt: content.updated_at,
  };
}

/** An outbox row as both stores select it. */
export interface OutboxRow {
  id: string;
  hook_id: string;
  event: string;
  body: string;
  attempts: number | string;
  created_at: string;
  last_error: string | null;
  dead_at: string | null;
}

export function outboxFromRow(r: OutboxRow): OutboxEntry {
  return {
    id: r.id,
    hookId: r.hook_id,
    event: r.event,
    body: r.body,
    attempts: Number(r.attempts),
    createdAt: r.created_at,
    lastError: r.last_error,
    deadAt: r.dead_at,
  };
}

/** A row of the environment listing: the environment with its item and live key counts. */
export interface EnvironmentListRow {
  env_id: string;
  created_at: string;
  content_count: number;
  key_count: number;
}

export function environmentInfo(r: EnvironmentListRow): EnvironmentInfo {
  return { id: r.env_id, createdAt: r.created_at, contentCount: r.content_count, keyCount: r.key_count };
}

export interface KeyListRow {
  key_id: string;
  env_id: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function keyInfo(r: KeyListRow): KeyInfo {
  return { id: r.key_id, envId: r.env_id, createdAt: r.created_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at };
}

/** A row of the content listing: the item with its newest revision's hash and its revision count. */
export interface ContentListRow {
  id: string;
  hash: string;
  revision_count: number;
  mapping_id: number | null;
  updated_at: string;
}

export function contentSummary(r: ContentListRow): ContentSummary {
  return { id: r.id, hash: r.hash, revisionCount: r.revision_count, hasMapping: r.mapping_id !== null, updatedAt: r.updated_at };
}

/**
 * A change set: the admin writes a scheduled change applies together, as one change, in one
 * environment (docs/schedule.md, "Changes"). Each op is exactly the admin write of the same name
 * (ops/content.ts runs both), optionally pinned to the item's newest revision (`baseRevision`: apply
 * only if the item is still at that revision; 0: only if it does not exist).
 *
 * Parsing checks everything that needs no store (shape, ids, app versions, JSONC compiled) and
 * reports the first problem with its path; the checks that need the store run when the change is
 * scheduled (a dry run) and again when it applies.
 */
import { RcdError } from '../../runtime/errors.js';
import { WriteBudget, compileContent, jsonContentText, type CompiledContent } from '../jsonc.js';
import { appVersionProblem, contentIdKey, contentIdProblem, envIdProblem } from '../ids.js';
import { isPlainObject } from '../../shared/json.js';
import * as content from '../ops/content.js';
import { editRules } from '../ops/rules.js';
import { ALL_ITEMS, call, type ScheduleItem, type Step } from '../ops/rows.js';
import type { SyncReport } from '../types.js';
import { ChangeOpSchema, type ChangeOp } from './change-op.js';

/** Ops in one change set: a calendar entry is a handful; a bound keeps one dry run short. */
export const MAX_OPS = 1000;

export const OP_NAMES = ['content.put', 'content.delete', 'content.rollback', 'mapping.put', 'mapping.delete', 'sync', 'rule.set'] as const;

/** What one op did when it applied: the facts audit entries and webhook events are made of. */
export type OpResult =
  | { readonly op: 'content.put' | 'content.rollback'; readonly env: string; readonly id: string; readonly hash: string; readonly revision: number; readonly changed: boolean }
  | { readonly op: 'content.delete' | 'mapping.delete'; readonly env: string; readonly id: string; readonly hash: string }
  | { readonly op: 'mapping.put' | 'rule.set'; readonly env: string; readonly id: string; readonly hash: string; readonly mappingId: number; readonly ruleCount: number }
  | { readonly op: 'sync'; readonly env: string; readonly to: string; readonly items: SyncReport['items'] };

/**
 * The ops of a request body, checked and normalised (a `json` content becomes its 2-space text, as in
 * bundles). Throws invalid_body (shape, with the path), invalid_request (an id or version the store
 * refuses) or invalid_content (JSONC that does not parse, content nested too deeply or too large, with
 * the op's index). `budget`: what the write these ops belong to stores in all (a bundle's, or the
 * change's own).
 */
export function parseOps(raw: unknown, envId: string, budget: WriteBudget = new WriteBudget()): ChangeOp[] {
  if (!Array.isArray(raw) || raw.length === 0) throw new RcdError('invalid_body', `ops must be a non-empty array of changes (at most ${MAX_OPS})`);
  if (raw.length > MAX_OPS) throw new RcdError('invalid_body', `at most ${MAX_OPS} ops in one change`);
  return raw.map((op, i) => parseOp(op, i, envId, budget));
}

function parseOp(raw: unknown, index: number, envId: string, budget: WriteBudget): ChangeOp {
  const parsed = ChangeOpSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = ['ops', index, ...issue.path].join('.');
    const reason = issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}` : issue.message.replace(/^Invalid input: /, '');
    throw new RcdError('invalid_body', `${where}: ${reason}`, { path: where });
  }
  const op = parsed.data;
  const at = `ops.${index}`;
  if (op.op === 'sync') {
    const problem = envIdProblem(op.to);
    if (problem !== '') throw new RcdError('invalid_body', `${at}.to: ${problem}`, { path: `${at}.to` });
    if (op.to === envId) throw new RcdError('invalid_body', `${at}.to: sync needs two different environments`, { path: `${at}.to` });
    return op;
  }
  const idProblem = contentIdProblem(op.id);
  if (idProblem !== '') throw new RcdError('invalid_request', `${at}.id: ${idProblem}`, { path: `${at}.id` });
  if (op.op === 'content.put') {
    if ((op.text === undefined) === (op.json === undefined)) {
      throw new RcdError('invalid_body', `${at}: content.put needs exactly one of text (JSONC) and json`, { path: at });
    }
    const minAppVersion = op.minAppVersion ?? null;
    const vProblem = minAppVersion === null ? '' : appVersionProblem(minAppVersion);
    if (vProblem !== '') throw new RcdError('invalid_request', `${at}.minAppVersion: ${vProblem}`, { path: `${at}.minAppVersion` });
    const text = op.text ?? opJsonText(op.json, index);
    compileOpText(text, index);
    withOpPath(() => budget.take(text), index, 'text');
    return { op: 'content.put', id: op.id, text, minAppVersion, ...(op.baseRevision === undefined ? {} : { baseRevision: op.baseRevision }) };
  }
  if (op.op === 'mapping.put' && !isPlainObject(op.mapping)) {
    throw new RcdError('invalid_body', `${at}.mapping: a mapping must be an object {"rules":[...]}`, { path: `${at}.mapping` });
  }
  return op;
}

function compileOpText(text: string, index: number): CompiledContent {
  return withOpPath(() => compileContent(text), index, 'text');
}

function opJsonText(json: unknown, index: number): string {
  return withOpPath(() => jsonContentText(json), index, 'json');
}

/** `fn`'s result; its refusal names the op's field. */
function withOpPath<T>(fn: () => T, index: number, field: string): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof RcdError) throw new RcdError(err.code, `ops.${index}.${field}: ${err.message}`, { path: `ops.${index}.${field}` });
    throw err;
  }
}

/** The items a change set touches (for the item filter and for which pending changes a dry run replays). */
export function itemsOf(envId: string, ops: readonly ChangeOp[]): ScheduleItem[] {
  const out = new Map<string, ScheduleItem>();
  const add = (env: string, idLower: string): void => {
    out.set(env + '\0' + idLower, { envId: env, idLower });
  };
  for (const op of ops) {
    if (op.op !== 'sync') {
      add(envId, contentIdKey(op.id));
      continue;
    }
    if (op.ids === undefined || op.ids === null) {
      add(envId, ALL_ITEMS);
      add(op.to, ALL_ITEMS);
    } else {
      for (const id of op.ids) {
        add(envId, contentIdKey(id));
        add(op.to, contentIdKey(id));
      }
    }
  }
  return [...out.values()];
}

/** The environments a change set writes to besides its own (a sync's target): the creator needs them in scope. */
export function targetEnvironments(ops: readonly ChangeOp[]): string[] {
  return [...new Set(ops.flatMap((op) => (op.op === 'sync' ? [op.to] : [])))];
}

/** Whether a change set holds a sync of every item (no `ids`): it names no content id, yet writes every item of its target. */
export function syncsEveryItem(ops: readonly ChangeOp[]): boolean {
  return ops.some((op) => op.op === 'sync' && (op.ids === undefined || op.ids === null));
}

/** The content ids a change set names, as written (for display). */
export function idsOf(ops: readonly ChangeOp[]): string[] {
  return [...new Set(ops.flatMap((op) => (op.op === 'sync' ? (op.ids ?? []) : [op.id])))];
}

/** Applies the ops in order, inside the caller's transaction; the first refusal throws and the caller rolls back. */
export function* applyOps(envId: string, ops: readonly ChangeOp[]): Step<OpResult[]> {
  const results: OpResult[] = [];
  for (const op of ops) results.push(yield* applyOp(envId, op));
  return results;
}

function* applyOp(envId: string, op: ChangeOp): Step<OpResult> {
  if (op.op !== 'sync' && op.baseRevision !== undefined) yield* checkBase(envId, op.id, op.baseRevision);
  switch (op.op) {
    case 'content.put': {
      const r = yield* content.putContent(envId, op.id, op.text as string, compileContent(op.text as string), op.minAppVersion ?? null);
      return { op: op.op, env: envId, id: r.id, hash: r.hash, revision: r.revision, changed: r.changed };
    }
    case 'content.rollback': {
      const r = yield* content.rollback(envId, op.id, op.to);
      return { op: op.op, env: envId, id: r.id, hash: r.hash, revision: r.revision, changed: r.changed };
    }
    case 'content.delete': {
      const r = yield* content.deleteContent(envId, op.id);
      return { op: op.op, env: envId, id: r.id, hash: r.hash };
    }
    case 'mapping.delete': {
      const r = yield* content.deleteMapping(envId, op.id);
      return { op: op.op, env: envId, id: r.id, hash: r.hash };
    }
    case 'mapping.put': {
      const r = yield* content.putMapping(envId, op.id, op.mapping);
      return { op: op.op, env: envId, id: r.id, hash: r.hash, mappingId: r.mappingId, ruleCount: r.ruleCount };
    }
    case 'rule.set': {
      const r = yield* editRules(envId, op.id, {
        rule: op.rule,
        segment: op.segment,
        variant: op.variant ?? null,
        ...(op.disabled === undefined ? {} : { disabled: op.disabled }),
        ...(op.mod === undefined ? {} : { mod: op.mod }),
      });
      return { op: op.op, env: envId, id: r.id, hash: r.hash, mappingId: r.mappingId, ruleCount: r.ruleCount };
    }
    case 'sync': {
      const r = yield* content.sync(envId, op.to, op.ids ?? undefined);
      return { op: op.op, env: envId, to: r.to, items: r.items };
    }
  }
}

/** The item's newest revision must be `expected` (0: the item must not exist). */
function* checkBase(envId: string, id: string, expected: number): Step<void> {
  const row = yield* call('findContent', envId, contentIdKey(id));
  const newest = row === undefined ? undefined : yield* call('newestRevision', row.content_pk);
  const actual = newest?.number ?? 0;
  if (actual !== expected) {
    throw new RcdError(
      'base_revision_changed',
      `${JSON.stringify(id)} is at revision ${actual === 0 ? 'none (it does not exist)' : actual}, not ${expected === 0 ? 'none' : expected} as the change was pinned to`,
      { id, expected, actual },
    );
  }
}

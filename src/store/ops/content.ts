/**
 * The content writes, each the part of one store write that runs inside its transaction, and the
 * read of one item with its revisions: written once (rows.ts says how) and run by both stores'
 * single writes and by the change sets of scheduled changes, the kill switch and rollouts. Checks that need no store (ids, app versions, the JSONC
 * compiled) are made by the caller before the transaction.
 */
import { RcdError } from '../../runtime/errors.js';
import { validateMapping } from '../../mapping/index.js';
import { contentIdKey } from '../ids.js';
import { nextNumber, nowIso, sameRevision, type ContentRow } from '../sqlite/sql.js';
import { checkMappingDepth, type CompiledContent } from '../jsonc.js';
import { contentDetail } from '../rows.js';
import type { ContentDetail, ContentRef, MappingResult, PutContentResult, SyncReport } from '../types.js';
import { call, type NewRevision, type Step } from './rows.js';

type SyncItem = SyncReport['items'][number];

export function* requireEnv(envId: string): Step<void> {
  if ((yield* call('getEnv', envId)) === undefined) throw new RcdError('not_found', `environment ${JSON.stringify(envId)} does not exist`);
}

export function* requireContent(envId: string, id: string): Step<ContentRow> {
  yield* requireEnv(envId);
  const row = typeof id === 'string' ? yield* call('findContent', envId, contentIdKey(id)) : undefined;
  if (row === undefined) {
    throw new RcdError('content_not_found', `content ${JSON.stringify(id)} does not exist in environment ${JSON.stringify(envId)}`);
  }
  return row;
}

/** One content item with every revision and its mapping, or undefined when it does not exist. */
export function* contentDetailOf(envId: string, id: string): Step<ContentDetail | undefined> {
  const content = yield* call('findContent', envId, contentIdKey(id));
  if (content === undefined) return undefined;
  const revisions = yield* call('revisions', content.content_pk);
  return contentDetail(content, revisions, (yield* call('getMapping', content.mapping_id))?.json);
}

/** Adds a revision (creating the item when missing) unless the newest already has this text and minAppVersion. */
export function* putContent(envId: string, id: string, text: string, compiled: CompiledContent, minAppVersion: string | null): Step<PutContentResult> {
  yield* requireEnv(envId);
  const at = nowIso();
  const key = contentIdKey(id);
  const content = (yield* call('findContent', envId, key)) ?? (yield* call('insertContent', envId, key, id, at));
  const newest = yield* call('newestRevision', content.content_pk);
  if (newest !== undefined && sameRevision(newest, text, minAppVersion)) {
    return { id: content.id, hash: newest.hash, revision: newest.number, changed: false };
  }
  const number = yield* call('appendRevision', content.content_pk, nextNumber(newest), text, compiled, minAppVersion, at);
  return { id: content.id, hash: compiled.hash, revision: number, changed: true };
}

export interface ContentPut {
  readonly id: string;
  readonly text: string;
  readonly compiled: CompiledContent;
  readonly minAppVersion: string | null;
}

/**
 * putContent for many distinct items of one environment in a few statements (the items and their
 * newest revisions read together, the new items and revisions written together): the results of one
 * putContent each, in order. What scheduled changes due together mostly are.
 */
export function* putContents(envId: string, puts: readonly ContentPut[]): Step<PutContentResult[]> {
  yield* requireEnv(envId);
  const at = nowIso();
  const keys = puts.map((p) => contentIdKey(p.id));
  const heads = yield* call('contentHeads', envId, keys);
  const missing = puts.flatMap((p, i) => (heads[i]!.content === undefined ? [{ idLower: keys[i]!, id: p.id }] : []));
  const created = new Map((yield* call('insertContents', envId, missing, at)).map((c) => [c.id_lower, c]));
  const results: PutContentResult[] = [];
  const revisions: NewRevision[] = [];
  puts.forEach((p, i) => {
    const head = heads[i]!;
    const content = (head.content ?? created.get(keys[i]!))!;
    if (head.newest !== undefined && sameRevision(head.newest, p.text, p.minAppVersion)) {
      results.push({ id: content.id, hash: head.newest.hash, revision: head.newest.number, changed: false });
      return;
    }
    const number = nextNumber(head.newest);
    revisions.push({ contentPk: content.content_pk, number, text: p.text, compiled: p.compiled, minAppVersion: p.minAppVersion, touch: head.content !== undefined });
    results.push({ id: content.id, hash: p.compiled.hash, revision: number, changed: true });
  });
  yield* call('insertRevisions', revisions, at);
  return results;
}

export function* deleteContent(envId: string, id: string): Step<ContentRef> {
  const content = yield* requireContent(envId, id);
  const ref = { id: content.id, hash: (yield* call('newestHash', content.content_pk)) ?? '' };
  // Revisions and mappings go with it (ON DELETE CASCADE); their ids are never reused.
  yield* call('deleteContent', content.content_pk);
  return ref;
}

/** Copies revision `to` as the newest revision (history is never rewritten). */
export function* rollback(envId: string, id: string, to: number): Step<PutContentResult> {
  const content = yield* requireContent(envId, id);
  const target = to > 2_147_483_647 ? undefined : yield* call('revision', content.content_pk, to);
  if (target === undefined) throw new RcdError('not_found', `revision ${to} of ${JSON.stringify(content.id)} does not exist`);
  const newest = yield* call('newestRevision', content.content_pk);
  if (newest !== undefined && sameRevision(newest, target.text, target.min_app_version)) {
    return { id: content.id, hash: newest.hash, revision: newest.number, changed: false };
  }
  const number = yield* call('appendRevision', content.content_pk, nextNumber(newest), target.text, target, target.min_app_version, nowIso());
  return { id: content.id, hash: target.hash, revision: number, changed: true };
}

/** Validates the mapping against the newest revision and makes it current (an identical one is kept). */
export function* putMapping(envId: string, id: string, mapping: unknown): Step<MappingResult> {
  const content = yield* requireContent(envId, id);
  const newest = yield* call('newestRevision', content.content_pk);
  if (newest === undefined) throw new RcdError('internal', `content ${JSON.stringify(content.id)} has no revision`);
  checkMappingDepth(mapping);
  const compiled = validateMapping(mapping, JSON.parse(newest.minified));
  return yield* storeMapping(content, newest.hash, JSON.stringify(mapping), compiled.ruleCount);
}

/** Makes `json` the item's mapping unless it already is; the caller validated it. */
export function* storeMapping(content: ContentRow, hash: string, json: string, ruleCount: number): Step<MappingResult> {
  const current = yield* call('getMapping', content.mapping_id);
  if (current !== undefined && current.json === json) return { id: content.id, hash, mappingId: current.mapping_id, ruleCount: current.rule_count };
  const mappingId = yield* call('insertMapping', content.content_pk, json, ruleCount, nowIso());
  return { id: content.id, hash, mappingId, ruleCount };
}

export function* deleteMapping(envId: string, id: string): Step<ContentRef> {
  const content = yield* requireContent(envId, id);
  if (content.mapping_id === null) throw new RcdError('not_found', `content ${JSON.stringify(content.id)} has no mapping`);
  yield* call('clearMapping', content.content_pk, nowIso());
  return { id: content.id, hash: (yield* call('newestHash', content.content_pk)) ?? '' };
}

/**
 * Sync (promote): copies the newest revision and the mapping of content items from one environment
 * to another. `ids` omitted means every item of `from`; an id missing from `from` refuses the whole
 * sync (content_not_found listing them).
 */
export function* sync(from: string, to: string, ids: readonly string[] | undefined): Step<SyncReport> {
  if (from === to) throw new RcdError('invalid_request', 'sync needs two different environments');
  yield* requireEnv(from);
  yield* requireEnv(to);
  let sources: ContentRow[];
  if (ids === undefined) {
    sources = yield* call('contentsOf', from);
  } else {
    sources = [];
    const seen = new Set<string>();
    const missing: string[] = [];
    for (const id of ids) {
      const key = contentIdKey(id);
      if (seen.has(key)) continue;
      seen.add(key);
      const row = yield* call('findContent', from, key);
      if (row === undefined) missing.push(id);
      else sources.push(row);
    }
    if (missing.length > 0) {
      throw new RcdError('content_not_found', `not in environment ${JSON.stringify(from)}: ${missing.map((m) => JSON.stringify(m)).join(', ')}`, {
        missing,
      });
    }
  }
  const at = nowIso();
  const items: SyncItem[] = [];
  for (const src of sources) items.push(yield* syncOne(src, to, at));
  return { from, to, items };
}

function* syncOne(src: ContentRow, to: string, at: string): Step<SyncItem> {
  const srcRev = yield* call('newestRevision', src.content_pk);
  if (srcRev === undefined) throw new RcdError('internal', `content ${JSON.stringify(src.id)} has no revision`);
  const srcMapping = yield* call('getMapping', src.mapping_id);
  let target = yield* call('findContent', to, src.id_lower);
  let action: SyncItem['action'] = 'unchanged';
  if (target === undefined) {
    target = yield* call('insertContent', to, src.id_lower, src.id, at);
    action = 'created';
  }
  const newest = yield* call('newestRevision', target.content_pk);
  if (newest === undefined || !sameRevision(newest, srcRev.text, srcRev.min_app_version)) {
    yield* call('appendRevision', target.content_pk, nextNumber(newest), srcRev.text, srcRev, srcRev.min_app_version, at);
    if (action === 'unchanged') action = 'updated';
  }
  const targetMapping = yield* call('getMapping', target.mapping_id);
  if (srcMapping === undefined) {
    if (targetMapping !== undefined) {
      yield* call('clearMapping', target.content_pk, at);
      if (action === 'unchanged') action = 'updated';
    }
  } else if (targetMapping === undefined || targetMapping.json !== srcMapping.json) {
    yield* call('insertMapping', target.content_pk, srcMapping.json, srcMapping.rule_count, at);
    if (action === 'unchanged') action = 'updated';
  }
  return { id: target.id, action, hash: srcRev.hash };
}

/**
 * Bundles: one JSON file that seeds or updates a store, and the format `export` writes.
 *
 * ```
 * {"environments":{"<envId>":{"keys":["<plain key>",...],"content":{"<ContentId>":ENTRY}}}}
 * ENTRY    = REVISION + optional "mapping", or {"revisions":[REVISION,...], "mapping"?: ...} (oldest first)
 * REVISION = {"text":"<JSONC>"} or {"json":<any JSON>}, optionally with "minAppVersion":"X.Y.Z"
 * ```
 *
 * Import is all or nothing: the whole bundle is checked first (shape, ids, keys, every text, every
 * mapping against the content it will apply to) and every problem is reported with its JSON Pointer
 * in the file; only a bundle without problems is written, inside the caller's transaction
 * (write.ts). This file holds the format and the checks that need no store.
 *
 * Import is idempotent, so a deployment can import its bundle at every start:
 * - keys already present in their environment are skipped (a revoked key stays revoked);
 * - a content item's revisions are compared with the newest stored ones: the longest run of the
 *   bundle's first revisions that already forms the newest stored revisions is skipped, the rest is
 *   appended. After an import the newest stored revisions equal the bundle's, and importing the same
 *   bundle again appends nothing. A single-revision ENTRY is the list of one;
 * - a mapping is stored only when it differs from the current one; an ENTRY without "mapping" leaves
 *   the current mapping alone, `"mapping": null` removes it.
 */
import { z } from 'zod';
import { WriteBudget, checkMappingDepth, compileContent, jsonContentText, type CompiledContent } from '../jsonc.js';
import { RcdError } from '../../runtime/errors.js';
import { validateMapping } from '../../mapping/index.js';
import { isPlainObject } from '../../shared/json.js';
import { apiKeyDigest, appVersionProblem, contentIdKey, contentIdProblem, envIdProblem, plainKeyProblem } from '../ids.js';
import { planSchedules, RolloutEntrySchema, ScheduleEntrySchema } from '../schedule/bundle.js';
import type { KeyCheck, PlannedContent, PlannedEnvironment, PlannedRevision, PreparedImport } from '../import-plan.js';
import type { BundleProblem } from './problems.js';

const RevisionSchema = z.strictObject({
  text: z.string().optional(),
  json: z.unknown().optional(),
  minAppVersion: z.string().optional(),
});

const EntrySchema = z.strictObject({
  text: z.string().optional(),
  json: z.unknown().optional(),
  minAppVersion: z.string().optional(),
  revisions: z.array(RevisionSchema).min(1, { error: 'revisions must list at least one revision' }).optional(),
  mapping: z.unknown().optional(),
});

const EnvironmentSchema = z.strictObject({
  keys: z.array(z.string()).optional(),
  content: z.record(z.string(), EntrySchema).optional(),
});

/** The shape of a bundle; the checks that need more than a shape (ids, texts, mappings, keys) follow it. */
export const BundleSchema = z.strictObject({
  note: z.string().optional(),
  environments: z.record(z.string(), EnvironmentSchema),
  /** Scheduled changes and rollouts not applied yet (src/store/schedule/bundle.ts). */
  schedules: z.array(ScheduleEntrySchema).optional(),
  rollouts: z.array(RolloutEntrySchema).optional(),
});

export type Bundle = z.infer<typeof BundleSchema>;

export type { BundleProblem } from './problems.js';

/** Every check of a bundle that needs no store, and its plan (see PreparedImport). */
export function prepareImport(raw: unknown): PreparedImport {
  const problems: BundleProblem[] = [];
  const parsed = BundleSchema.safeParse(raw);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      if (issue.code === 'unrecognized_keys') {
        for (const k of issue.keys) problems.push({ path: pointer([...issue.path, k]), reason: 'unknown field' });
      } else {
        problems.push({ path: pointer(issue.path), reason: issue.message.replace(/^Invalid input: /, '') });
      }
    }
  }
  // The checks below walk the raw input defensively (the shape may be wrong in places) so that one
  // refusal lists every problem, not only the first layer's.
  const keyChecks: KeyCheck[] = [];
  // One budget for everything the import stores: its content and its schedules' content.
  const budget = new WriteBudget();
  const plan = planBundle(raw, problems, keyChecks, budget);
  const schedules = isPlainObject(raw) ? planSchedules(raw, problems, budget) : { schedules: [], rollouts: [] };
  return { plan, problems, keyChecks, schedules };
}

function planBundle(raw: unknown, problems: BundleProblem[], keyChecks: KeyCheck[], budget: WriteBudget): PlannedEnvironment[] {
  const plan: PlannedEnvironment[] = [];
  if (!isPlainObject(raw) || !isPlainObject(raw.environments)) return plan;
  const keyOwner = new Map<string, string>();
  for (const [envId, env] of Object.entries(raw.environments)) {
    const envPath = ['environments', envId];
    const envProblem = envIdProblem(envId);
    if (envProblem !== '') problems.push({ path: pointer(envPath), reason: envProblem });
    if (!isPlainObject(env)) continue;
    const planned: PlannedEnvironment = { envId, keyDigests: [], contents: [] };
    plan.push(planned);
    if (Array.isArray(env.keys)) planKeys(envId, env.keys, envPath, keyOwner, planned, problems, keyChecks);
    if (isPlainObject(env.content)) {
      const seen = new Map<string, string>();
      for (const [id, entry] of Object.entries(env.content)) {
        const path = [...envPath, 'content', id];
        const idProblem = contentIdProblem(id);
        if (idProblem !== '') {
          problems.push({ path: pointer(path), reason: idProblem });
          continue;
        }
        const idLower = contentIdKey(id);
        const twin = seen.get(idLower);
        if (twin !== undefined) {
          problems.push({ path: pointer(path), reason: `same content id as ${JSON.stringify(twin)} (ids are compared after Unicode normalisation and case folding)` });
          continue;
        }
        seen.set(idLower, id);
        if (!isPlainObject(entry)) continue;
        const content = planContent(id, idLower, entry, path, problems, budget);
        if (content !== null) planned.contents.push(content);
      }
    }
  }
  return plan;
}

function planKeys(
  envId: string,
  keys: unknown[],
  envPath: readonly string[],
  keyOwner: Map<string, string>,
  planned: PlannedEnvironment,
  problems: BundleProblem[],
  keyChecks: KeyCheck[],
): void {
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (typeof key !== 'string') continue;
    const path = pointer([...envPath, 'keys', i]);
    const keyProblem = plainKeyProblem(key);
    if (keyProblem !== '') {
      problems.push({ path, reason: keyProblem });
      continue;
    }
    // Reasons never quote the key: error messages end up in logs.
    const digest = apiKeyDigest(key);
    const owner = keyOwner.get(digest);
    if (owner !== undefined) {
      if (owner !== envId) problems.push({ path, reason: `the same key is also listed for environment ${JSON.stringify(owner)}; a key belongs to one environment` });
      continue;
    }
    keyOwner.set(digest, envId);
    // Its owner in the store is checked by finishImport; a key another environment owns fails the
    // whole import there, so planning it here writes nothing wrong.
    keyChecks.push({ digest, envId, path, at: problems.length });
    planned.keyDigests.push(digest);
  }
}

function planContent(
  id: string,
  idLower: string,
  entry: Record<string, unknown>,
  path: readonly (string | number)[],
  problems: BundleProblem[],
  budget: WriteBudget,
): PlannedContent | null {
  const forms = Number(has(entry, 'text')) + Number(has(entry, 'json')) + Number(has(entry, 'revisions'));
  if (forms !== 1) {
    problems.push({ path: pointer(path), reason: 'an entry needs exactly one of "text", "json" or "revisions"' });
    return null;
  }
  let ok = true;
  const revisions: PlannedRevision[] = [];
  let newestValue: unknown;
  if (has(entry, 'revisions')) {
    if (has(entry, 'minAppVersion')) {
      problems.push({ path: pointer([...path, 'minAppVersion']), reason: 'with "revisions", minAppVersion belongs on each revision' });
      ok = false;
    }
    if (!Array.isArray(entry.revisions)) return null;
    const list = entry.revisions as unknown[];
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      if (!isPlainObject(item)) {
        ok = false;
        continue;
      }
      const r = planRevision(item, [...path, 'revisions', i], problems, budget);
      if (r === null) ok = false;
      else {
        revisions.push(r.revision);
        newestValue = r.value;
      }
    }
  } else {
    const r = planRevision(entry, path, problems, budget);
    if (r === null) ok = false;
    else {
      revisions.push(r.revision);
      newestValue = r.value;
    }
  }
  const setsMapping = has(entry, 'mapping');
  let mappingJson: string | null = null;
  let ruleCount = 0;
  if (setsMapping && entry.mapping !== null) {
    // The mapping is checked against the revision that will be newest after the import: the last.
    if (!ok || revisions.length === 0) return null;
    try {
      checkMappingDepth(entry.mapping);
      ruleCount = validateMapping(entry.mapping, newestValue).ruleCount;
      mappingJson = JSON.stringify(entry.mapping);
    } catch (err) {
      pushMappingProblems(err, [...path, 'mapping'], problems);
      return null;
    }
  }
  if (!ok) return null;
  return { id, idLower, revisions, setsMapping, mappingJson, ruleCount };
}

function planRevision(
  item: Record<string, unknown>,
  path: readonly (string | number)[],
  problems: BundleProblem[],
  budget: WriteBudget,
): { readonly revision: PlannedRevision; readonly value: unknown } | null {
  const before = problems.length;
  if (Number(has(item, 'text')) + Number(has(item, 'json')) !== 1) {
    problems.push({ path: pointer(path), reason: 'a revision needs exactly one of "text" or "json"' });
    return null;
  }
  let minAppVersion: string | null = null;
  if (has(item, 'minAppVersion')) {
    const v = item.minAppVersion;
    const vProblem = appVersionProblem(v);
    if (vProblem !== '') problems.push({ path: pointer([...path, 'minAppVersion']), reason: vProblem });
    else minAppVersion = v as string;
  }
  let text: string;
  let field: string;
  if (has(item, 'text')) {
    if (typeof item.text !== 'string') return null; // reported by the schema
    text = item.text;
    field = 'text';
  } else {
    // A JSON value is stored as its 2-space indented text (jsonc.ts), so re-importing the same value
    // is recognised as unchanged.
    try {
      text = jsonContentText(item.json);
    } catch (err) {
      problems.push({ path: pointer([...path, 'json']), reason: err instanceof Error ? err.message : String(err) });
      return null;
    }
    field = 'json';
  }
  let compiled: CompiledContent;
  try {
    compiled = compileContent(text);
    budget.take(text);
  } catch (err) {
    problems.push({ path: pointer([...path, field]), reason: err instanceof Error ? err.message : String(err) });
    return null;
  }
  if (problems.length > before) return null;
  return { revision: { text, minAppVersion, compiled: { minified: compiled.minified, hash: compiled.hash } }, value: compiled.value };
}

/**
 * Spreads an invalid_mapping refusal into bundle problems. Its details list every problem with the
 * rule index (`[{rule, reason}]`, as docs/api.md documents); when a problem also carries its own path inside
 * the mapping (e.g. `rules[1].variants[0].mod`), that path is used, as a JSON Pointer.
 */
function pushMappingProblems(err: unknown, path: readonly (string | number)[], problems: BundleProblem[]): void {
  const details = err instanceof RcdError ? err.details : undefined;
  const list: unknown = isPlainObject(details) ? details.problems : details;
  if (!(err instanceof RcdError) || !Array.isArray(list) || list.length === 0) {
    problems.push({ path: pointer(path), reason: err instanceof Error ? err.message : String(err) });
    return;
  }
  for (const d of list as unknown[]) {
    const rule = isPlainObject(d) && typeof d.rule === 'number' ? d.rule : null;
    const reason = isPlainObject(d) && typeof d.reason === 'string' ? d.reason : err.message;
    const inner = isPlainObject(d) && typeof d.path === 'string' && d.path !== '' ? parseDottedPath(d.path) : rule === null ? [] : ['rules', rule];
    problems.push({ path: pointer([...path, ...inner]), reason });
  }
}

/** `rules[1].variants[0].mod` -> ['rules', 1, 'variants', 0, 'mod']. */
function parseDottedPath(p: string): (string | number)[] {
  const out: (string | number)[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(p)) !== null) {
    if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

export type BundleEntry = z.infer<typeof EntrySchema>;

function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key) && obj[key] !== undefined;
}

/** RFC 6901 JSON Pointer. */
export function pointer(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += '/' + String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
  return out;
}

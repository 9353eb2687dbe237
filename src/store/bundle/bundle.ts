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
 * in the file; only a bundle without problems is written, inside the caller's transaction.
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
import { apiKeyDigest, appVersionProblem, contentIdKey, contentIdProblem, envIdProblem, generateKeyId, plainKeyProblem } from '../ids.js';
import { nextNumber, nowIso, sameRevision, type RevisionRow, type StoreSql } from '../sqlite/sql.js';
import type { ContentImportReport } from '../types.js';
import { planSchedules, RolloutEntrySchema, ScheduleEntrySchema, type SchedulePlan } from '../schedule/bundle.js';
import { bundleError, type BundleProblem } from './problems.js';

export const EXPORT_NOTE =
  'API keys are not exported: the store keeps only SHA-256 digests of keys, never the keys themselves. ' +
  'Add "keys" to each environment (or create keys through the admin API) before importing this bundle elsewhere.';

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

export interface PlannedRevision {
  readonly text: string;
  readonly minAppVersion: string | null;
  /** What is stored beside the text; the parsed value stays in the thread that planned it. */
  readonly compiled: Pick<CompiledContent, 'minified' | 'hash'>;
}

export interface PlannedContent {
  readonly id: string;
  readonly idLower: string;
  readonly revisions: PlannedRevision[];
  /** Whether the entry says anything about the mapping. */
  readonly setsMapping: boolean;
  /** null removes the mapping. */
  readonly mappingJson: string | null;
  readonly ruleCount: number;
}

export interface PlannedEnvironment {
  readonly envId: string;
  readonly keyDigests: string[];
  readonly contents: PlannedContent[];
}

/** A key the bundle lists whose owner in the store is checked when the plan is written. */
export interface KeyCheck {
  readonly digest: string;
  readonly envId: string;
  /** JSON Pointer of the key in the bundle. */
  readonly path: string;
  /** Where its problem, if any, goes among PreparedImport.problems: the order a one-pass check reports. */
  readonly at: number;
}

/**
 * A bundle checked for everything that needs no store (shape, ids, keys' form, every text, every
 * mapping against its content) and planned. Plain data, so it crosses threads: the admin API
 * prepares an import in a thread of its own (src/control/import-pool.ts).
 */
export interface PreparedImport {
  readonly plan: readonly PlannedEnvironment[];
  readonly problems: readonly BundleProblem[];
  readonly keyChecks: readonly KeyCheck[];
  /** Scheduled changes and rollouts to record once the content is written. */
  readonly schedules: SchedulePlan;
}

/**
 * Validates a prepared bundle against the store (key ownership) and writes it. Must run inside a
 * write transaction: it throws invalid_bundle (nothing written) when there is any problem.
 */
export function importPrepared(sql: StoreSql, prepared: PreparedImport): ContentImportReport {
  return applyPlan(sql, finishImport(prepared, (digest) => sql.keyByDigest(digest)?.env_id));
}

/**
 * The bundle checked and planned: every problem found (thrown as one invalid_bundle), or what to
 * write. `storedOwner` says which environment a stored key digest belongs to (undefined: not stored).
 */
export function planImport(raw: unknown, storedOwner: (digest: string) => string | undefined): readonly PlannedEnvironment[] {
  return finishImport(prepareImport(raw), storedOwner);
}

/**
 * The checks that need the store: a key the bundle lists must not belong to another environment.
 * Returns the plan, or throws every problem of the bundle as one invalid_bundle, in bundle order.
 * A store that cannot look owners up synchronously reads those of preparedKeyDigests() first.
 */
export function finishImport(prepared: PreparedImport, storedOwner: (digest: string) => string | undefined): readonly PlannedEnvironment[] {
  const problems: BundleProblem[] = [];
  let from = 0;
  for (const check of prepared.keyChecks) {
    const stored = storedOwner(check.digest);
    if (stored === undefined || stored === check.envId) continue;
    problems.push(...prepared.problems.slice(from, check.at));
    from = check.at;
    problems.push({ path: check.path, reason: `this key already belongs to environment ${JSON.stringify(stored)}; a key belongs to one environment` });
  }
  if (problems.length === 0 && prepared.problems.length === 0) return prepared.plan;
  problems.push(...prepared.problems.slice(from));
  throw bundleError(problems);
}

/** The digests of the keys a prepared bundle lists, for finishImport's owner lookups. */
export function preparedKeyDigests(prepared: PreparedImport): string[] {
  return prepared.keyChecks.map((c) => c.digest);
}

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

function applyPlan(sql: StoreSql, plan: readonly PlannedEnvironment[]): ContentImportReport {
  let environmentsCreated = 0;
  let keysAdded = 0;
  let revisionsAdded = 0;
  let mappingsChanged = 0;
  const at = nowIso();
  for (const env of plan) {
    if (sql.getEnv(env.envId) === undefined) {
      sql.insertEnv(env.envId, at);
      environmentsCreated++;
    }
    for (const digest of env.keyDigests) {
      if (sql.keyByDigest(digest) !== undefined) continue;
      sql.insertKey(generateKeyId(), env.envId, digest, at);
      keysAdded++;
    }
    for (const c of env.contents) {
      const existing = sql.findContent(env.envId, c.idLower);
      const row = existing ?? sql.insertContent(env.envId, c.idLower, c.id, at);
      // A row created here has no revisions to compare, and its insert is already in the change log:
      // a release's new items skip a read and an update each (a third of a big import's writing).
      const stored = existing === undefined ? [] : sql.newestRevisions(row.content_pk, c.revisions.length);
      const skip = overlap(stored, c.revisions);
      let number = nextNumber(stored.length > 0 ? stored[stored.length - 1] : undefined);
      for (let i = skip; i < c.revisions.length; i++) {
        const r = c.revisions[i]!;
        if (existing === undefined) sql.insertRevision(row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
        else sql.appendRevision(row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
        number++;
        revisionsAdded++;
      }
      if (!c.setsMapping) continue;
      const current = sql.getMapping(row.mapping_id);
      if (c.mappingJson === null) {
        if (current !== undefined) {
          sql.clearMapping(row.content_pk, at);
          mappingsChanged++;
        }
      } else if (current === undefined || current.json !== c.mappingJson) {
        sql.insertMapping(row.content_pk, c.mappingJson, c.ruleCount, at);
        mappingsChanged++;
      }
    }
  }
  return { environmentsCreated, keysAdded, revisionsAdded, mappingsChanged };
}

/**
 * How many of the bundle's first revisions already are the newest stored ones (stored is the newest
 * `wanted.length` revisions, oldest first): the largest k where stored's last k equal wanted's first k.
 */
export function overlap(
  stored: readonly Pick<RevisionRow, 'text' | 'min_app_version'>[],
  wanted: readonly { readonly text: string; readonly minAppVersion: string | null }[],
): number {
  for (let k = Math.min(stored.length, wanted.length); k > 0; k--) {
    let equal = true;
    for (let j = 0; j < k && equal; j++) {
      // k <= both lengths, so both indexes are in range.
      const w = wanted[j]!;
      equal = sameRevision(stored[stored.length - k + j]!, w.text, w.minAppVersion);
    }
    if (equal) return k;
  }
  return 0;
}

export type BundleEntry = z.infer<typeof EntrySchema>;

/** One content item as export writes it: revisions oldest first with their texts as stored. */
export function exportEntry(revisions: readonly Pick<RevisionRow, 'text' | 'min_app_version'>[], mappingJson: string | undefined): BundleEntry {
  const list = revisions.map((r) => (r.min_app_version === null ? { text: r.text } : { text: r.text, minAppVersion: r.min_app_version }));
  return mappingJson === undefined ? { revisions: list } : { revisions: list, mapping: JSON.parse(mappingJson) as unknown };
}

/** Everything but API keys, in the import format; revisions oldest first with their texts as stored. */
export function exportBundle(sql: StoreSql): Bundle {
  const environments: Bundle['environments'] = {};
  const envs = sql.db.prepare<{ env_id: string }>('SELECT env_id FROM environments ORDER BY env_id').all();
  const contentsStmt = sql.db.prepare<{ content_pk: number; id: string; mapping_id: number | null }>(
    'SELECT content_pk, id, mapping_id FROM contents WHERE env_id = ? ORDER BY id_lower',
  );
  for (const { env_id: envId } of envs) {
    const content: Record<string, BundleEntry> = {};
    for (const c of contentsStmt.all(envId)) setOwn(content, c.id, exportEntry(sql.revisions(c.content_pk), sql.getMapping(c.mapping_id)?.json));
    setOwn(environments, envId, { keys: [], content });
  }
  return { note: EXPORT_NOTE, environments };
}

/** Ids such as "__proto__" are valid; a plain assignment would set a prototype instead of a field. */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}


function has(obj: Record<string, unknown>, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key) && obj[key] !== undefined;
}

/** RFC 6901 JSON Pointer. */
export function pointer(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) out += '/' + String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
  return out;
}

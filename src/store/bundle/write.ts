/**
 * Writing a prepared bundle (bundle.ts) into a store, inside the caller's write transaction: the
 * checks that need the store (which environment owns each key the bundle lists), then the plan,
 * idempotently (bundle.ts says how), then the bundle's scheduled changes and rollouts. A step
 * (src/store/ops/rows.ts), so both stores run this one definition.
 */
import { generateKeyId } from '../ids.js';
import { call, type Step } from '../ops/rows.js';
import { importSchedules } from '../schedule/bundle.js';
import { nextNumber, nowIso, sameRevision, type RevisionRow } from '../sqlite/sql.js';
import type { ContentImportReport, ImportReport } from '../types.js';
import type { ImportScheduler, PlannedContent, PlannedEnvironment, PreparedImport } from '../import-plan.js';
import { bundleError, type BundleProblem } from './problems.js';

/** Checks the prepared bundle against the store and writes it; throws invalid_bundle (nothing written) on any problem. */
export function* importStep(prepared: PreparedImport, by: ImportScheduler): Step<ImportReport> {
  const owners = yield* call('keyOwners', prepared.keyChecks.map((c) => c.digest));
  const content = yield* writePlan(finishImport(prepared, (digest) => owners.get(digest)));
  return { ...content, ...(yield* importSchedules(prepared.schedules, by)) };
}

/**
 * The checks that need the store: a key the bundle lists must not belong to another environment.
 * Returns the plan, or throws every problem of the bundle as one invalid_bundle, in bundle order.
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

/** Writes a checked plan: the environments, keys, revisions and mappings it adds or changes. */
export function* writePlan(plan: readonly PlannedEnvironment[]): Step<ContentImportReport> {
  const report = { environmentsCreated: 0, keysAdded: 0, revisionsAdded: 0, mappingsChanged: 0 };
  const at = nowIso();
  for (const env of plan) {
    if ((yield* call('getEnv', env.envId)) === undefined) {
      yield* call('insertEnv', env.envId, at);
      report.environmentsCreated++;
    }
    for (const digest of env.keyDigests) {
      if ((yield* call('keyByDigest', digest)) !== undefined) continue;
      yield* call('insertKey', generateKeyId(), env.envId, digest, at);
      report.keysAdded++;
    }
    for (const c of env.contents) yield* writeContent(env.envId, c, at, report);
  }
  return report;
}

function* writeContent(envId: string, c: PlannedContent, at: string, report: { -readonly [K in keyof ContentImportReport]: number }): Step<void> {
  const existing = yield* call('findContent', envId, c.idLower);
  const row = existing ?? (yield* call('insertContent', envId, c.idLower, c.id, at));
  // An item created here has no revisions to compare, and its insert is already in the change log:
  // its revisions are inserted without reading the newest ones or marking it updated.
  const stored = existing === undefined ? [] : yield* call('newestRevisions', row.content_pk, c.revisions.length);
  let number = nextNumber(stored.length > 0 ? stored[stored.length - 1] : undefined);
  for (let i = overlap(stored, c.revisions); i < c.revisions.length; i++) {
    const r = c.revisions[i]!;
    if (existing === undefined) yield* call('insertRevision', row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
    else yield* call('appendRevision', row.content_pk, number, r.text, r.compiled, r.minAppVersion, at);
    number++;
    report.revisionsAdded++;
  }
  if (!c.setsMapping) return;
  const current = yield* call('getMapping', row.mapping_id);
  if (c.mappingJson === null) {
    if (current === undefined) return;
    yield* call('clearMapping', row.content_pk, at);
    report.mappingsChanged++;
  } else if (current === undefined || current.json !== c.mappingJson) {
    yield* call('insertMapping', row.content_pk, c.mappingJson, c.ruleCount, at);
    report.mappingsChanged++;
  }
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

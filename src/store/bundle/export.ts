/**
 * Export: everything a store holds but API keys, in the import format (bundle.ts), with the
 * scheduled changes and rollouts not applied yet. A step (src/store/ops/rows.ts), run in one read
 * transaction by either store.
 */
import { call, type Step } from '../ops/rows.js';
import { exportSchedules, withSchedules } from '../schedule/bundle.js';
import type { RevisionRow } from '../sqlite/sql.js';
import type { Bundle, BundleEntry } from './bundle.js';

export const EXPORT_NOTE =
  'API keys are not exported: the store keeps only SHA-256 digests of keys, never the keys themselves. ' +
  'Add "keys" to each environment (or create keys through the admin API) before importing this bundle elsewhere.';

/** The bundle: environments in binary order, items by id_lower, revisions oldest first with their texts as stored. */
export function* exportStep(): Step<Bundle> {
  const environments: Bundle['environments'] = {};
  for (const envId of yield* call('envIds')) {
    const content: Record<string, BundleEntry> = {};
    for (const c of yield* call('contentsOf', envId)) {
      const revisions = yield* call('revisions', c.content_pk);
      setOwn(content, c.id, exportEntry(revisions, (yield* call('getMapping', c.mapping_id))?.json));
    }
    setOwn(environments, envId, { keys: [], content });
  }
  return withSchedules({ note: EXPORT_NOTE, environments }, yield* exportSchedules());
}

/** One content item as export writes it: revisions oldest first with their texts as stored. */
function exportEntry(revisions: readonly Pick<RevisionRow, 'text' | 'min_app_version'>[], mappingJson: string | undefined): BundleEntry {
  const list = revisions.map((r) => (r.min_app_version === null ? { text: r.text } : { text: r.text, minAppVersion: r.min_app_version }));
  return mappingJson === undefined ? { revisions: list } : { revisions: list, mapping: JSON.parse(mappingJson) as unknown };
}

/** Ids such as "__proto__" are valid; a plain assignment would set a prototype instead of a field. */
function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

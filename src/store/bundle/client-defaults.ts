/**
 * `rcd export --client-defaults ENV`: the first-launch values a game ships (the SDK's `defaults`
 * option, src/client/defaults.ts), made from a bundle (the store's export, or the admin API's): for
 * each content id of ENV, the catalog's `h` and `d` and the content as delivered without mutations.
 *
 * Built from the export rather than from a store query so that one function serves both ways the
 * CLI exports (a store file, a running server's admin API) and always agrees with the bundle format.
 */
import { CLIENT_DEFAULTS_FORMAT, type ClientDefaults, type ClientDefaultsItem } from '../../client/defaults.js';
import { RcdError } from '../../runtime/errors.js';
import { parseAppVersion, versionKeyOf } from '../../shared/app-version.js';
import { compileContent, jsonContentText } from '../jsonc.js';
import { BundleSchema } from './bundle.js';

interface BundleRevision {
  text?: string | undefined;
  json?: unknown;
  minAppVersion?: string | undefined;
}

/**
 * `appVersion` (X.Y.Z) picks, per id, the revision a client of that version is delivered (the newest
 * whose minAppVersion fits); ids with no such revision are left out, as the server would answer them
 * 404. Without it, the newest revision of each id.
 */
export function clientDefaults(bundle: unknown, envId: string, appVersion: string | null, now: Date): ClientDefaults {
  if (appVersion !== null && parseAppVersion(appVersion) === null) throw new RcdError('invalid_query', `--app-version must be X.Y.Z, not ${JSON.stringify(appVersion)}`);
  const parsed = BundleSchema.parse(bundle);
  if (!Object.prototype.hasOwnProperty.call(parsed.environments, envId)) throw new RcdError('not_found', `no environment ${JSON.stringify(envId)}`);
  const content = parsed.environments[envId]!.content ?? {};
  const vKey = appVersion === null ? null : versionKeyOf(appVersion);
  const items: Record<string, ClientDefaultsItem> = {};
  for (const [id, entry] of Object.entries(content)) {
    const revisions: BundleRevision[] = entry.revisions ?? [entry];
    const newest = compileContent(textOf(revisions[revisions.length - 1]!));
    const chosen = vKey === null ? revisions[revisions.length - 1] : revisions.findLast((r) => r.minAppVersion === undefined || versionKeyOf(r.minAppVersion) <= vKey);
    if (chosen === undefined) continue;
    const delivered = chosen === revisions[revisions.length - 1] ? newest : compileContent(textOf(chosen));
    const rules = (entry.mapping as { rules?: unknown[] } | null | undefined)?.rules;
    const item: ClientDefaultsItem = { h: newest.hash, d: Array.isArray(rules) && rules.length > 0, hash: delivered.hash, data: delivered.value };
    Object.defineProperty(items, id, { value: item, enumerable: true, writable: true, configurable: true });
  }
  return { format: CLIENT_DEFAULTS_FORMAT, env: envId, appVersion, exportedAt: now.toISOString(), items };
}

function textOf(revision: BundleRevision): string {
  return revision.text ?? jsonContentText(revision.json);
}

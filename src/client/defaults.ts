/**
 * Client defaults: what a game ships as its first-launch values, written by
 * `rcd export --client-defaults ENV`. For every content id of the environment: the catalog's hash
 * `h` and mapping flag `d`, and the content as delivered without mutations (`data`). A client that
 * starts with them serves `data` at once and, at its first refresh, downloads only the ids whose
 * catalog hash changed since the build (plus the ids with a mapping, revalidated as always).
 */
export const CLIENT_DEFAULTS_FORMAT = 'rcd-client-defaults/1';

export interface ClientDefaultsItem {
  /** The catalog hash of the newest revision when the defaults were exported. */
  readonly h: string;
  /** True when the content has a mapping with at least one rule. */
  readonly d: boolean;
  /** The hash of the revision in `data` (the newest one, or the one for --app-version). */
  readonly hash: string;
  /** The content JSON, without mutations. */
  readonly data: unknown;
}

export interface ClientDefaults {
  readonly format: typeof CLIENT_DEFAULTS_FORMAT;
  readonly env: string;
  /** The app version the revisions were chosen for, or null (the newest revision of each id). */
  readonly appVersion: string | null;
  readonly exportedAt: string;
  readonly items: Readonly<Record<string, ClientDefaultsItem>>;
}

/** Checks the shape of a defaults file (it is read from a file the game ships, so it is trusted little). */
export function checkClientDefaults(value: unknown): ClientDefaults {
  const fail = (why: string): never => {
    throw new TypeError(`not an rcd client defaults file: ${why}`);
  };
  if (typeof value !== 'object' || value === null) return fail('not an object');
  const v = value as Record<string, unknown>;
  if (v.format !== CLIENT_DEFAULTS_FORMAT) return fail(`format is not ${CLIENT_DEFAULTS_FORMAT}`);
  const items = v.items;
  if (typeof items !== 'object' || items === null || Array.isArray(items)) return fail('items is not an object');
  for (const [id, item] of Object.entries(items as Record<string, unknown>)) {
    const it = item as Record<string, unknown> | null;
    if (typeof it !== 'object' || it === null || typeof it.h !== 'string' || typeof it.d !== 'boolean' || typeof it.hash !== 'string' || !('data' in it)) {
      return fail(`item ${JSON.stringify(id)} is not {h, d, hash, data}`);
    }
  }
  return value as ClientDefaults;
}

/**
 * The --exposures value as text: `off`, `sqlite:PATH` or a PostgreSQL URL (docs/experiments.md,
 * "The assignment table"). Pure: no driver is loaded and no file is touched, so the flag can be
 * checked while the configuration is read, and the main thread never loads a database driver.
 */
import { dirname, join, resolve } from 'node:path';
import { isPostgresUrl, redactPostgresUrl } from '../store/url.js';

export type ExposuresKind = 'sqlite' | 'postgres';

/** Where exposures are written: a SQLite file (`sqlite:` and an absolute path) or a PostgreSQL URL as given. */
export interface ExposuresTarget {
  readonly kind: ExposuresKind;
  readonly url: string;
}

/** A --exposures value rcd cannot use; the message names the flag and says what it takes. */
export class ExposuresUrlError extends Error {}

const SHAPE = 'off, sqlite:PATH or postgres://user:password@host:port/database';

/**
 * Parses a --exposures value: null for `off` (or nothing), else the kind and URL. A SQLite path is
 * made absolute (against the working directory) and may not be the config store's own file, which
 * `storeUrl` names when given. Throws ExposuresUrlError for anything else.
 */
export function parseExposuresUrl(text: string, storeUrl?: string): ExposuresTarget | null {
  const value = text.trim();
  if (value === '' || value === 'off') return null;
  if (value.startsWith('sqlite:')) return sqliteTarget(value.slice('sqlite:'.length), storeUrl);
  if (isPostgresUrl(value)) return postgresTarget(value);
  const shown = value.includes('@') ? '(a URL of another kind)' : `"${value}"`;
  throw new ExposuresUrlError(`--exposures must be ${SHAPE}, got ${shown}`);
}

function sqliteTarget(path: string, storeUrl: string | undefined): ExposuresTarget {
  if (path === '' || path === ':memory:' || path.startsWith('file:')) {
    throw new ExposuresUrlError(`--exposures sqlite:PATH needs the path of a file (got "sqlite:${path}")`);
  }
  const absolute = resolve(path);
  if (storeUrl?.startsWith('sqlite:') === true && resolve(storeUrl.slice('sqlite:'.length)) === absolute) {
    const beside = join(dirname(absolute), 'exposures.db');
    throw new ExposuresUrlError(`--exposures sqlite:${path} is the config store's file: exposures are written to a file of their own (e.g. sqlite:${beside})`);
  }
  return { kind: 'sqlite', url: `sqlite:${absolute}` };
}

function postgresTarget(url: string): ExposuresTarget {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ExposuresUrlError(`--exposures: malformed PostgreSQL URL ${redactPostgresUrl(url)}: use postgres://user:password@host:port/database`);
  }
  if (u.hostname === '' || u.pathname.length <= 1) {
    throw new ExposuresUrlError(`--exposures: the PostgreSQL URL ${redactPostgresUrl(url)} needs a host and a database: postgres://user:password@host:port/database`);
  }
  return { kind: 'postgres', url };
}

/** The target as logs show it: a PostgreSQL password never appears. */
export function describeExposuresTarget(target: ExposuresTarget): string {
  return target.kind === 'postgres' ? redactPostgresUrl(target.url) : target.url;
}

/** The file of a `sqlite:` target. */
export function sqlitePathOf(url: string): string {
  return url.slice('sqlite:'.length);
}

/**
 * The admin token: one bearer secret for the management plane.
 *
 * RCD_ADMIN_TOKEN wins; otherwise a random token is generated on first start and kept in
 * `<dataDir>/admin-token` (mode 0600) so the CLI on the same machine can read it and a restart
 * keeps it. The token is never logged; only its id (a digest prefix) appears in the audit log.
 *
 * One normalisation everywhere a token is read or presented: surrounding whitespace (spaces, tabs,
 * line breaks) is not part of the token. Node already strips spaces and tabs around a header value;
 * trimming the configured side the same way means a token pasted with a trailing newline or space
 * still matches what every client sends.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { join } from 'node:path';
import { ConfigError } from '../runtime/config.js';
import { createSecretFile, readSecretFile } from '../runtime/secret-file.js';

export const ADMIN_TOKEN_FILE = 'admin-token';

/**
 * Bounds of an admin token after trimming. 16 characters is the shortest a person would still call
 * a password; a generated token is 43. Visible ASCII only: a header carries it byte for byte, so a
 * token with other characters could never be presented. The upper bound keeps it well inside the
 * admin listener's header limits.
 */
export const MIN_ADMIN_TOKEN_CHARS = 16;
export const MAX_ADMIN_TOKEN_CHARS = 1024;
const TOKEN_CHARS = /^[\x21-\x7e]*$/;

export interface ResolvedAdminToken {
  readonly token: string;
  readonly source: 'env' | 'file';
  /** The file the token was read from or written to (source 'file' only). */
  readonly path?: string;
}

/** The one trimming rule, for the configured token and the presented one alike. */
export function normaliseToken(raw: string): string {
  return raw.trim();
}

/** '' when `token` (already normalised) is acceptable as the server's admin token, else why not. */
export function adminTokenProblem(token: string): string {
  if (token.length < MIN_ADMIN_TOKEN_CHARS || token.length > MAX_ADMIN_TOKEN_CHARS) {
    return `must be ${MIN_ADMIN_TOKEN_CHARS}-${MAX_ADMIN_TOKEN_CHARS} characters after trimming surrounding whitespace, got ${token.length}`;
  }
  if (!TOKEN_CHARS.test(token)) return 'must be visible ASCII characters only (no spaces or control characters inside)';
  return '';
}

/**
 * The server side: RCD_ADMIN_TOKEN, else read `<dataDir>/admin-token`, creating it (0600) when
 * missing. Throws ConfigError (one line, the process stops before listening) for a token that is
 * too short, too long or holds characters a header cannot carry.
 */
export function resolveAdminToken(dataDir: string, env: NodeJS.ProcessEnv = process.env): ResolvedAdminToken {
  const fromEnv = env.RCD_ADMIN_TOKEN;
  if (fromEnv !== undefined && fromEnv !== '') {
    const token = normaliseToken(fromEnv);
    const problem = adminTokenProblem(token);
    if (problem !== '') throw new ConfigError(`RCD_ADMIN_TOKEN ${problem}`);
    return { token, source: 'env' };
  }
  const path = join(dataDir, ADMIN_TOKEN_FILE);
  const existing = readTokenFile(path);
  if (existing !== undefined) return { token: checkedFileToken(path, existing), source: 'file', path };
  const token = randomBytes(32).toString('base64url');
  // Never overwrites a token another process wrote a moment ago.
  if (createSecretFile(path, token + '\n')) return { token, source: 'file', path };
  const raced = readTokenFile(path);
  if (raced === undefined) throw new ConfigError(`${path} exists but holds no token`);
  return { token: checkedFileToken(path, raced), source: 'file', path };
}

function checkedFileToken(path: string, token: string): string {
  const problem = adminTokenProblem(token);
  if (problem !== '') throw new ConfigError(`the admin token in ${path} ${problem}`);
  return token;
}

/** The CLI side: RCD_ADMIN_TOKEN, else `<dataDir>/admin-token`; never creates anything. */
export function readAdminToken(dataDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.RCD_ADMIN_TOKEN;
  if (fromEnv !== undefined && fromEnv !== '') return normaliseToken(fromEnv);
  return readTokenFile(join(dataDir, ADMIN_TOKEN_FILE));
}

function readTokenFile(path: string): string | undefined {
  const text = readSecretFile(path);
  if (text === undefined) return undefined;
  const token = normaliseToken(text);
  return token === '' ? undefined : token;
}

/** A stable, non-secret name for a token: the first 8 hex digits of its SHA-256. */
export function adminTokenId(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex').slice(0, 8);
}

/**
 * Compiles a constant-time check for one expected token. Both sides are hashed first so the
 * comparison has a fixed length and timing says nothing about the token's length or prefix.
 */
export function tokenMatcher(expected: string): (presented: string) => boolean {
  const want = createHash('sha256').update(expected, 'utf8').digest();
  return function matches(presented: string): boolean {
    const got = createHash('sha256').update(presented, 'utf8').digest();
    return timingSafeEqual(got, want);
  };
}

/**
 * The admin token: one bearer secret for the management plane.
 *
 * RCD_ADMIN_TOKEN wins; otherwise a random token is generated on first start and kept in
 * `<dataDir>/admin-token` (mode 0600) so the CLI on the same machine can read it and a restart
 * keeps it. The token is never logged; only its id (a digest prefix) appears in the audit log.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const ADMIN_TOKEN_FILE = 'admin-token';

export interface ResolvedAdminToken {
  readonly token: string;
  readonly source: 'env' | 'file';
  /** The file the token was read from or written to (source 'file' only). */
  readonly path?: string;
}

/** The server side: RCD_ADMIN_TOKEN, else read `<dataDir>/admin-token`, creating it (0600) when missing. */
export function resolveAdminToken(dataDir: string, env: NodeJS.ProcessEnv = process.env): ResolvedAdminToken {
  const fromEnv = env.RCD_ADMIN_TOKEN;
  if (fromEnv !== undefined && fromEnv !== '') return { token: fromEnv, source: 'env' };
  const path = join(dataDir, ADMIN_TOKEN_FILE);
  const existing = readTokenFile(path);
  if (existing !== undefined) return { token: existing, source: 'file', path };
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(32).toString('base64url');
  try {
    // 'wx': never overwrite a token another process wrote a moment ago.
    writeFileSync(path, token + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const raced = readTokenFile(path);
    if (raced === undefined) throw new Error(`${path} exists but holds no token`);
    return { token: raced, source: 'file', path };
  }
  return { token, source: 'file', path };
}

/** The CLI side: RCD_ADMIN_TOKEN, else `<dataDir>/admin-token`; never creates anything. */
export function readAdminToken(dataDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const fromEnv = env.RCD_ADMIN_TOKEN;
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return readTokenFile(join(dataDir, ADMIN_TOKEN_FILE));
}

function readTokenFile(path: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const token = text.trim();
  if (token === '') return undefined;
  // A copy restored from a backup may have lost its mode; a token readable by others is a leak.
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  return token;
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

import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/runtime/config.js';
import {
  adminTokenId,
  MAX_ADMIN_TOKEN_CHARS,
  MIN_ADMIN_TOKEN_CHARS,
  readAdminToken,
  resolveAdminToken,
  tokenMatcher,
} from '../../../src/admin/token.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rcd-token-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('resolveAdminToken', () => {
  it('uses RCD_ADMIN_TOKEN when set and writes no file', () => {
    const dir = tempDir();
    const r = resolveAdminToken(dir, { RCD_ADMIN_TOKEN: 'from-env-admin-token' });
    expect(r).toEqual({ token: 'from-env-admin-token', source: 'env' });
    expect(() => statSync(join(dir, 'admin-token'))).toThrow();
  });

  it('creates a random 0600 token file on first start and reuses it afterwards', () => {
    const dir = join(tempDir(), 'nested', 'data');
    const first = resolveAdminToken(dir, {});
    expect(first.source).toBe('file');
    expect(first.path).toBe(join(dir, 'admin-token'));
    expect(first.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(statSync(join(dir, 'admin-token')).mode & 0o777).toBe(0o600);
    const second = resolveAdminToken(dir, {});
    expect(second.token).toBe(first.token);
    expect(readAdminToken(dir, {})).toBe(first.token);
    expect(resolveAdminToken(tempDir(), {}).token).not.toBe(first.token);
  });

  it('tightens a token file that others can read', () => {
    const dir = tempDir();
    const path = join(dir, 'admin-token');
    writeFileSync(path, 'restored-admin-token\n');
    chmodSync(path, 0o644);
    expect(resolveAdminToken(dir, {}).token).toBe('restored-admin-token');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('restored-admin-token\n');
  });

  it('trims the configured token like the presented one and refuses tokens a header cannot carry', () => {
    const dir = tempDir();
    expect(resolveAdminToken(dir, { RCD_ADMIN_TOKEN: ' \tpadded-admin-token-1\n' }).token).toBe('padded-admin-token-1');
    expect(readAdminToken(dir, { RCD_ADMIN_TOKEN: ' padded-admin-token-1 ' })).toBe('padded-admin-token-1');
    expect(resolveAdminToken(dir, { RCD_ADMIN_TOKEN: 'x'.repeat(MIN_ADMIN_TOKEN_CHARS) }).token).toHaveLength(MIN_ADMIN_TOKEN_CHARS);
    for (const bad of ['a', 'x'.repeat(MIN_ADMIN_TOKEN_CHARS - 1), '   ', 'x'.repeat(MAX_ADMIN_TOKEN_CHARS + 1), 'has a space inside!', 'caf\u00e9-admin-token-x']) {
      expect(() => resolveAdminToken(dir, { RCD_ADMIN_TOKEN: bad })).toThrow(ConfigError);
    }
    writeFileSync(join(dir, 'admin-token'), 'short\n', { mode: 0o600 });
    expect(() => resolveAdminToken(dir, {})).toThrow(ConfigError);
  });

  it('readAdminToken never creates a file', () => {
    const dir = tempDir();
    expect(readAdminToken(dir, {})).toBeUndefined();
    expect(readAdminToken(dir, { RCD_ADMIN_TOKEN: 'x' })).toBe('x');
    expect(() => statSync(join(dir, 'admin-token'))).toThrow();
  });
});

describe('tokenMatcher and adminTokenId', () => {
  it('accepts exactly the expected token', () => {
    const matches = tokenMatcher('s3cret-token');
    expect(matches('s3cret-token')).toBe(true);
    expect(matches('s3cret-token ')).toBe(false);
    expect(matches('s3cret')).toBe(false);
    expect(matches('')).toBe(false);
  });

  it('names a token by the first 8 hex digits of its SHA-256', () => {
    // sha256("abc") = ba7816bf...
    expect(adminTokenId('abc')).toBe('ba7816bf');
  });
});

/**
 * Webhook secrets at rest: sealed with AES-256-GCM under a key kept outside the database, in
 * `<dataDir>/webhook-key` (mode 0600, beside the admin token). Signing needs the secret itself, so a
 * digest is no option; sealing means a copy of the store file alone (a backup, a support bundle, a
 * disk image) does not reveal the secrets. Someone who can read both the store and the key file (the
 * server's user, root, a backup that holds the whole data directory) can still open them; that is
 * the documented limit.
 *
 * Sealed form: `v1.` + base64url(12-byte random IV | ciphertext | 16-byte tag). The webhook id is
 * bound as associated data, so a sealed secret copied onto another row does not open there.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ConfigError } from '../../runtime/config.js';
import { createSecretFile, readSecretFile } from '../../runtime/secret-file.js';

export const WEBHOOK_KEY_FILE = 'webhook-key';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX = 'v1.';
const KEY_TEXT = /^[A-Za-z0-9_-]{43}$/;

/** A fresh key for state that lives only in this process (memory: stores): nothing is written. */
export function ephemeralSealKey(): Buffer {
  return randomBytes(KEY_BYTES);
}

/**
 * Reads `<dataDir>/webhook-key`, creating it (0600, data directory 0700 when created) on first use.
 * A file that holds anything but one key stops the start with one line: guessing would seal new
 * secrets under a key that the next start cannot reproduce.
 */
export function loadSealKey(dataDir: string): { key: Buffer; path: string; created: boolean } {
  const path = join(dataDir, WEBHOOK_KEY_FILE);
  const existing = readKeyFile(path);
  if (existing !== undefined) return { key: existing, path, created: false };
  const key = randomBytes(KEY_BYTES);
  // Never replaces a key another process wrote a moment ago: its secrets would not open.
  if (createSecretFile(path, key.toString('base64url') + '\n')) return { key, path, created: true };
  const raced = readKeyFile(path);
  if (raced === undefined) throw new ConfigError(`${path} exists but holds no key`);
  return { key: raced, path, created: false };
}

function readKeyFile(path: string): Buffer | undefined {
  const text = readSecretFile(path);
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!KEY_TEXT.test(trimmed)) {
    throw new ConfigError(`${path} does not hold a webhook key (43 base64url characters); restore it or remove it and re-register the webhooks`);
  }
  return Buffer.from(trimmed, 'base64url');
}

export function sealSecret(key: Buffer, secret: string, webhookId: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(webhookId, 'utf8'));
  const body = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

/** The secret, or null when `sealed` was not sealed with this key for this webhook id. */
export function openSealed(key: Buffer, sealed: string, webhookId: string): string | null {
  if (!sealed.startsWith(PREFIX)) return null;
  const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(webhookId, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]);
    return plain.toString('utf8');
  } catch {
    return null;
  }
}

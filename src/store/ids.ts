/**
 * The rules for identifiers and values the store accepts, shared by the Store methods and bundle
 * validation (so both refuse the same things with the same words), and the API-key digest the front
 * end uses to look a key up.
 *
 * Each check returns '' when the value is acceptable, otherwise the reason: bundle validation
 * collects every reason, the Store methods throw the first.
 */
import { createHash, randomBytes } from 'node:crypto';
import { APP_VERSION_PATTERN } from '../shared/app-version.js';
import { caselessKey } from './case-fold.js';

/** Environment ids: case sensitive; 1-64 of [A-Za-z0-9_.-], starting with a letter, digit or `_`. */
export const ENV_ID = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
/** C0 and C1 control characters. */
// eslint-disable-next-line no-control-regex -- matching control characters is what this pattern is for
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const EDGE_SPACE = /^\s|\s$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
/**
 * Plain API keys given by an operator (bundle or admin API): visible ASCII only, so the key is a
 * valid header value that no proxy rewrites, within these bounds. The one rule for both paths.
 * Why 8 and not more: a key ships inside every game build, so it names an environment rather than
 * guarding a secret, and `rcd serve --import` at every start must keep accepting bundles it accepted
 * before. Generated keys (256 random bits) are the recommended form.
 */
export const MIN_PLAIN_KEY_CHARS = 8;
export const MAX_PLAIN_KEY_CHARS = 256;
const PLAIN_KEY = new RegExp(`^[\\x21-\\x7e]{${MIN_PLAIN_KEY_CHARS},${MAX_PLAIN_KEY_CHARS}}$`);

export const MAX_CONTENT_ID_CHARS = 256;

export function envIdProblem(envId: unknown): string {
  if (typeof envId !== 'string') return 'an environment id must be a string';
  if (!ENV_ID.test(envId)) {
    return 'an environment id must be 1-64 characters of A-Z a-z 0-9 _ . - and start with a letter, digit or _';
  }
  return '';
}

export function contentIdProblem(id: unknown): string {
  if (typeof id !== 'string') return 'a content id must be a string';
  if (id.length === 0) return 'a content id must not be empty';
  if (LONE_SURROGATE.test(id)) return 'a content id must be valid Unicode (no lone surrogates)';
  if (codePoints(id) > MAX_CONTENT_ID_CHARS) return `a content id must be at most ${MAX_CONTENT_ID_CHARS} characters`;
  if (CONTROL.test(id)) return 'a content id must not contain control characters';
  if (EDGE_SPACE.test(id)) return 'a content id must not start or end with whitespace';
  return '';
}

function codePoints(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++; // a low surrogate completes a pair already counted
  }
  return n;
}

/**
 * The lookup key of a content id: ids are compared caselessly, under one rule everywhere (delivery,
 * combine, admin API, bundles, sync): two ids are the same id when they are a Unicode canonical
 * caseless match, i.e. equal after NFD, default full case folding (CaseFolding.txt C + F, not the
 * Turkic T mappings) and normalisation. The key is NFC(toCasefold(NFD(id))) (see ./case-fold.ts);
 * `PlayerSettings` = `playersettings`, `STRASSE` = `STRAẞE` = `Straße`, NFC `é` = NFD `é`.
 *
 * On the delivery hot path (every request's id, every id of a combine): an all-ASCII id, the usual
 * case, is its own NFC and NFD and folds exactly as ASCII lower-casing does, so it takes
 * `toLowerCase` after one scan; only a non-ASCII id pays for normalisation and folding.
 */
export function contentIdKey(id: string): string {
  for (let i = 0; i < id.length; i++) {
    if (id.charCodeAt(i) >= 0x80) return caselessKey(id);
  }
  return id.toLowerCase();
}

export function appVersionProblem(v: unknown): string {
  if (typeof v !== 'string' || !APP_VERSION_PATTERN.test(v)) {
    return 'minAppVersion must be a version X.Y.Z of three non-negative integers without leading zeros';
  }
  return '';
}

export function plainKeyProblem(key: unknown): string {
  if (typeof key !== 'string' || !PLAIN_KEY.test(key)) {
    return `an API key must be ${MIN_PLAIN_KEY_CHARS}-${MAX_PLAIN_KEY_CHARS} visible ASCII characters (no spaces)`;
  }
  return '';
}

/** SHA-256 hex of the UTF-8 bytes of a plain API key: the only form a key is stored in. */
export function apiKeyDigest(plainKey: string): string {
  return createHash('sha256').update(plainKey, 'utf8').digest('hex');
}

/** A new plain API key: 32 random bytes in base64url (256 bits of entropy, safe in a header). */
export function generateKey(): string {
  return 'rcd_' + randomBytes(32).toString('base64url');
}

/** The public id of a key (shown in listings, used to revoke it); reveals nothing about the key. */
export function generateKeyId(): string {
  return 'key_' + randomBytes(8).toString('hex');
}

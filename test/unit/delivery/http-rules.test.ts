/**
 * The rules behind the HTTP headers: If-None-Match matching (etag.ts), Accept-Encoding (encoding.ts)
 * stream tokens (stream-token.ts) and the Content-Length limit check (routes.ts).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Coding, STAR_IGNORED, etagValue, matchIfNoneMatch } from '../../../src/delivery/etag.js';
import { ACCEPT_BR, ACCEPT_GZIP, PREFER_BR, acceptedCodings } from '../../../src/delivery/encoding.js';
import { mintStreamToken, verifyStreamToken } from '../../../src/delivery/stream-token.js';
import { Directory, MappingLibrary } from '../../../src/delivery/directory.js';
import { NO_CONTENTS } from '../../../src/control/routed.js';
import { declaredOver } from '../../../src/delivery/routes.js';

describe('Content-Length over the body limit', () => {
  // What uWS lets through to a handler: digits, with spaces around them (anything else closes the
  // connection first: test/e2e/request-head.test.ts). The answer is Number()'s.
  it.each(['0', '1', '999', '9999', '65535', '65536', '65537', '000065537', '0000000000065537', '999999999999999', '9999999999999999', '', ' 70000', '70000 ', ' 7 ', '  70'])(
    '%j',
    (value) => {
      expect(declaredOver(value, 65536)).toBe(Number(value) > 65536);
    },
  );
  it('the limit itself is not over, at any limit', () => {
    expect(declaredOver('65536', 65536)).toBe(false);
    expect(declaredOver('65537', 65536)).toBe(true);
    for (const max of [1, 9, 10, 99, 100, 1000, 16 * 1024 * 1024]) {
      expect(declaredOver(String(max), max)).toBe(false);
      expect(declaredOver(String(max + 1), max)).toBe(true);
      expect(declaredOver(`0${max + 1}`, max)).toBe(true);
    }
  });
});

describe('If-None-Match', () => {
  const tag = 'wabc.3.0.-1;.77';
  it.each([
    ['', -1],
    [etagValue(tag, Coding.Identity), Coding.Identity],
    [etagValue(tag, Coding.Gzip), Coding.Gzip],
    [etagValue(tag, Coding.Br), Coding.Br],
    [`W/${etagValue(tag, Coding.Identity)}`, Coding.Identity],
    [`"x", "y",${etagValue(tag, Coding.Gzip)}`, Coding.Gzip],
    ['*', Coding.Gzip],
    [' * ', Coding.Gzip],
    [`"${tag}7"`, -1],
    [`"x${tag}"`, -1],
    [`"${tag}.zz"`, -1],
    [tag, -1],
  ])('%j → %i', (header, expected) => {
    expect(matchIfNoneMatch(header, tag, Coding.Gzip)).toBe(expected);
  });

  it('* matches nothing where it is ignored (the content POSTs), and a tag still does', () => {
    expect(matchIfNoneMatch('*', tag, STAR_IGNORED)).toBe(-1);
    expect(matchIfNoneMatch(' * ', tag, STAR_IGNORED)).toBe(-1);
    expect(matchIfNoneMatch(etagValue(tag, Coding.Gzip), tag, STAR_IGNORED)).toBe(Coding.Gzip);
  });
});

describe('Accept-Encoding', () => {
  it.each([
    ['', 0],
    ['gzip', ACCEPT_GZIP],
    ['gzip, deflate, br, zstd', ACCEPT_GZIP | ACCEPT_BR | PREFER_BR],
    ['br;q=0.5, gzip', ACCEPT_GZIP | ACCEPT_BR],
    ['gzip;q=0.5, br;q=0.5', ACCEPT_GZIP | ACCEPT_BR | PREFER_BR],
    ['*', ACCEPT_GZIP | ACCEPT_BR | PREFER_BR],
    ['*;q=0, gzip', ACCEPT_GZIP],
    ['gzip;q=0', 0],
    ['x-gzip', ACCEPT_GZIP],
    ['GZip ; Q=1', ACCEPT_GZIP],
    ['br;q=nonsense', 0],
    ['identity', 0],
  ])('%j → %i', (header, expected) => {
    expect(acceptedCodings(header)).toBe(expected);
  });
});

describe('stream tokens', () => {
  const digest = createHash('sha256').update('plain-key-1').digest('hex');
  const dir = new Directory(
    { seq: 0, environments: ['prod'], keys: [{ digest, keyId: 'key_1', envId: 'prod' }], contents: NO_CONTENTS },
    new MappingLibrary({ readRevision: () => undefined, readMapping: () => undefined, close: () => undefined }, () => undefined),
    new Map(),
  );
  const now = 1_800_000_000_000;

  it('a token minted with the key verifies until it expires', () => {
    const token = mintStreamToken('key_1', digest, now, 60);
    expect(verifyStreamToken(dir, token, now)?.env.id).toBe('prod');
    expect(verifyStreamToken(dir, token, now + 59_000)?.keyId).toBe('key_1');
    expect(verifyStreamToken(dir, token, now + 60_000)).toBeUndefined();
  });

  it('refuses forged, altered, malformed tokens and tokens of unknown keys', () => {
    const token = mintStreamToken('key_1', digest, now, 60);
    const [id, expiry, sig] = token.split('.') as [string, string, string];
    expect(verifyStreamToken(dir, `${id}.${Number(expiry) + 1000}.${sig}`, now)).toBeUndefined();
    expect(verifyStreamToken(dir, mintStreamToken('key_1', createHash('sha256').update('other').digest('hex'), now, 60), now)).toBeUndefined();
    expect(verifyStreamToken(dir, mintStreamToken('key_2', digest, now, 60), now)).toBeUndefined();
    for (const bad of ['', '.', 'a.b', 'key_1..', `${id}.${expiry}.`, `${id}.x.${sig}`]) expect(verifyStreamToken(dir, bad, now)).toBeUndefined();
  });
});

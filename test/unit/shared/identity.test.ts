import { describe, expect, it } from 'vitest';
import { contentHash, userMod, userUid } from '../../../src/shared/identity.js';

// Vectors also printed in docs/api.md so clients can check their own implementation.
describe('identity hashes', () => {
  it.each([
    ['', 46947589],
    ['abc', 852579327],
    ['player-1', userUid('player-1')],
  ])('uid(%j) = %i', (u, uid) => {
    expect(userUid(u)).toBe(uid);
    expect(userMod(uid)).toBe(uid % 1000);
  });

  it('hashes UTF-8 bytes, not UTF-16 code units', () => {
    expect(userUid('é')).not.toBe(userUid('e'));
    expect(userUid('é')).toBe(userUid('\u00e9'));
  });

  it('content hash is XXH3-128 as 32 lowercase hex digits', () => {
    expect(contentHash('abc')).toBe('06b05ab6733a618578af5f94892f3950');
    expect(contentHash('{}')).toMatch(/^[0-9a-f]{32}$/);
  });
});

/**
 * A catalog body's entity tag (opaque part): `k` + XXH3-128 of the body. Computed once per body where
 * it is built (the control thread), so every node of a store and every restart give the same body
 * the same tag: the body is byte for byte the same whichever path built it.
 */
import { bytesHash, BytesHasher } from './identity.js';

export function catalogTag(body: Uint8Array): string {
  return 'k' + bytesHash(body);
}

/** The tag of the body made of `pieces` in order: the same as catalogTag of their concatenation. */
export function catalogTagOfPieces(pieces: readonly Uint8Array[]): string {
  const hasher = new BytesHasher();
  for (const p of pieces) hasher.update(p);
  return 'k' + hasher.digest();
}

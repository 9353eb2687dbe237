/**
 * The two hashes clients can reproduce (documented in docs/api.md):
 * - meta.uid = XXH32(seed 0) of the UTF-8 bytes of u, as an unsigned 32-bit integer; meta.mod = uid % 1000.
 * - content hash = XXH3-128 of the minified base JSON text, 32 lowercase hex digits.
 *
 * uid is per request and short: pure JS (src/shared/xxh32.ts) wins. The content hash runs on writes over
 * up to megabytes: the xxhash-addon's native XXH3 is the right tool there.
 */
import xxhash from 'xxhash-addon';
import * as xxh32 from './xxh32.js';

interface StreamingHash {
  update(data: Buffer): void;
  digest(): Buffer;
}
// Bound at load: an import is a cell TurboFan reads and compares before each call it inlines (src/delivery/request.ts).
const { xxh32String } = xxh32;
const { XXHash128 } = xxhash as unknown as { XXHash128: { hash(data: Buffer): Buffer; new (seed: Buffer): StreamingHash } };

export function userUid(u: string): number {
  return xxh32String(u, 0);
}

export function userMod(uid: number): number {
  return uid % 1000;
}

export function contentHash(minifiedJson: string): string {
  return XXHash128.hash(Buffer.from(minifiedJson, 'utf8')).toString('hex');
}

/** XXH3-128 of bytes as 32 hex digits (a catalog body's entity tag, computed once per body). */
export function bytesHash(bytes: Uint8Array): string {
  return XXHash128.hash(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('hex');
}

/** A zero seed: the same digests as the one-shot hash (which defaults to 0). */
const SEED_ZERO = Buffer.alloc(4);

/** XXH3-128 of bytes given in pieces: digest() equals bytesHash of their concatenation. */
export class BytesHasher {
  // xxhash-addon 2.1's constructor without a seed crashes the process (a segfault on Node 20), so
  // the zero seed is always passed.
  private readonly state: StreamingHash = new XXHash128(SEED_ZERO);

  update(bytes: Uint8Array): void {
    this.state.update(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }

  digest(): string {
    return this.state.digest().toString('hex');
  }
}

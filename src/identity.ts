/**
 * The two hashes clients can reproduce (documented in docs/api.md):
 * - meta.uid = XXH32(seed 0) of the UTF-8 bytes of u, as an unsigned 32-bit integer; meta.mod = uid % 1000.
 * - content hash = XXH3-128 of the minified base JSON text, 32 lowercase hex digits.
 */
import xxhash from 'xxhash-addon';

const { XXHash32, XXHash128 } = xxhash as unknown as {
  XXHash32: { hash(data: Buffer): Buffer };
  XXHash128: { hash(data: Buffer): Buffer };
};

export function userUid(u: string): number {
  return XXHash32.hash(Buffer.from(u, 'utf8')).readUInt32BE(0);
}

export function userMod(uid: number): number {
  return uid % 1000;
}

export function contentHash(minifiedJson: string): string {
  return XXHash128.hash(Buffer.from(minifiedJson, 'utf8')).toString('hex');
}

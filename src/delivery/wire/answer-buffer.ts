/**
 * The answer buffer: one reused buffer per thread that combines, OFREP envelopes, gzip members and
 * joined catalog bodies are written into before one end() sends them. Its bytes are the caller's
 * until the next answer is built (wire/README.md, rule 2).
 */
import * as sharedBytes from '../../shared/bytes.js';
import { ReusedBuffer } from '../../shared/bytes.js';

// The writer used here, as this module's own const (wire/README.md, "Module consts").
const { putBytes } = sharedBytes;

// Where a wrapped answer is assembled. Reused for every response: uWS copies what end() is given
// before returning (into its cork buffer or the socket's backpressure buffer), so the bytes are free
// again at once. It grows to the
// largest answer sent: every answer is one end() with a Content-Length, large ones included.
let scratch = new ReusedBuffer(64 * 1024 + 4096);

/** The reused answer buffer, at least `size` bytes (its contents are the caller's until it returns). */
export function answerBuffer(size: number): Buffer {
  if (scratch.size < size) scratch = new ReusedBuffer(Math.max(size, scratch.size * 2));
  return scratch.bytes;
}

/** A DataView of the answer buffer as last returned by answerBuffer (digits are written through it as words). */
export function answerWords(): DataView {
  return scratch.words;
}

/**
 * The first `length` bytes of the answer buffer (as last returned by answerBuffer) as a plain
 * Uint8Array: Buffer's subarray creates its result through the species constructor (a property
 * lookup and Node's FastBuffer constructor in JS), this view without either.
 */
export function answerView(length: number): Uint8Array {
  if (length > scratch.size) throw new RangeError(`wire: a view of ${length} bytes of the ${scratch.size}-byte answer buffer`);
  return scratch.view(length);
}

/**
 * A body given in pieces (a large catalog, src/control/catalog.ts) joined into the reused answer
 * buffer, to be sent with one end() like any other answer; valid until the next answer is built.
 * Streaming the pieces instead (tryEnd, then onWritable on backpressure) would spare this copy, but
 * this uWS build never calls onWritable for an answer that has
 * pipelined requests queued behind it: the connection stalls (a bare uWS app does the same), while
 * end() buffers what the socket does not take and drains it in either case.
 */
export function joinPieces(pieces: readonly Uint8Array[], total: number): Buffer {
  const out = answerBuffer(total);
  let at = 0;
  for (const p of pieces) at = putBytes(out, p, at);
  return out.subarray(0, at);
}

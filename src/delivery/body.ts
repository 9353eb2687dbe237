/**
 * A request body as uWS hands it over (src/delivery/request.ts; the benchmark's floor, bench/ceiling.ts,
 * does the same). HOT PATH: every content request.
 */

// Faster than Buffer.from(chunk).toString() on request bodies, one object less: 381 -> 139 ns and
// 250 -> 153 bytes per body (bench/micro/alloc.ts).
// ignoreBOM keeps a leading BOM in the text, as Buffer#toString does: JSON.parse then refuses it.
const BODY_DECODER = new TextDecoder('utf-8', { ignoreBOM: true });
/**
 * decode's options, given so that node's decode reads `stream` from an ordinary object: left out, it
 * reads it from its default, a frozen object without a prototype, which V8 keeps as a dictionary, so
 * the read went through the generic LoadIC and a hash lookup in lines seldom cached (~8 L1 misses a
 * request, bench:cost --cache-sim with callgrind's per-instruction dump).
 */
const DECODE_WHOLE = { stream: false };

/** A chunk that is not the last, copied: uWS reuses its memory once the data handler returns. */
export function keptChunk(chunk: ArrayBuffer): Buffer {
  return Buffer.from(chunk.slice(0));
}

/** The whole body as text: the kept chunks (null when the body came in one) and the last one. */
export function bodyText(kept: Buffer[] | null, last: ArrayBuffer): string {
  if (kept === null) return BODY_DECODER.decode(last, DECODE_WHOLE);
  kept.push(Buffer.from(last));
  return BODY_DECODER.decode(Buffer.concat(kept), DECODE_WHOLE);
}

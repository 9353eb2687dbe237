/**
 * A request body as uWS hands it over, and its JSON (lifecycle.ts, the native and the OFREP context
 * parsers; the benchmark's floor, bench/ceiling.ts, does the same). HOT PATH: every content request.
 */
import { runInNewContext } from 'node:vm';
import { RcdError } from '../runtime/errors.js';

// Faster than Buffer.from(chunk).toString() on request bodies, and one object less.
// ignoreBOM keeps a leading BOM in the text, as Buffer#toString does: JSON.parse then refuses it.
const BODY_DECODER = new TextDecoder('utf-8', { ignoreBOM: true });
/**
 * decode's options, given so that node's decode reads `stream` from an ordinary object: left out, it
 * reads it from its default, a frozen object without a prototype, which V8 keeps as a dictionary, so
 * the read goes through the generic LoadIC and a hash lookup in lines seldom cached.
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

/**
 * JSON.parse of a realm of its own (a node:vm context made once per thread), for request bodies. V8's
 * parser follows a map's transition to the next key when the map has just one; the objects of the
 * thread's own realm start from a map with a transition for every first key the thread's objects ever
 * had (node's and rcd's), so each key of a body's objects would be internalized through the string
 * table and searched for in a transition array. In a realm where only bodies are parsed, the body
 * shapes are the only transitions. The values are ordinary JSON
 * values whose objects and arrays have that realm's prototypes: rcd tests them with typeof,
 * Array.isArray and Object.hasOwn, never instanceof. Throws that realm's SyntaxError. The realm is
 * made once per thread, a small fixed heap cost.
 */
export const parseBodyJson = runInNewContext('JSON.parse') as (text: string) => unknown;

/**
 * A request body's JSON value, for the native and the OFREP body alike; throws RcdError invalid_json
 * when the body is empty (`empty`: what to send instead) or is not JSON.
 */
export function bodyJson(text: string, empty: string): unknown {
  if (text.length === 0) throw new RcdError('invalid_json', empty);
  try {
    return parseBodyJson(text);
  } catch {
    throw new RcdError('invalid_json', 'the request body is not valid JSON');
  }
}

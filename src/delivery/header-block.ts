/**
 * The headers of a 200 content answer as one uWS call instead of four.
 *
 * uWS's writeHeader(name, value) copies `name: value\r\n` into the response as given. Every call
 * crosses from JavaScript into C++ (a handle scope, argument checks, one more append); on the mapped
 * path the four header calls (Content-Type, ETag, Cache-Control, Vary) were the largest JavaScript
 * item of the main thread's profile after the rule evaluation (bench/README.md, "Where the time of a
 * mapped request goes"). So Content-Type's value carries the other three lines after it:
 * `application/json\r\ncache-control: …\r\nvary: …\r\netag: "…"`, the constant part prebuilt per
 * (Cache-Control, Vary) pair and the tag copied behind it into a reused buffer. The bytes on the wire
 * are the same header lines (ETag last).
 *
 * Only bytes this server made go in: the constant values, and tags built from content hashes by
 * etag.ts (hex and base64url characters, quotes, a coding suffix), never request bytes, so no line
 * break can reach the block from outside. CORS headers, whose origin value comes from the operator's
 * list, keep their own calls (reply.ts).
 */

import { ReusedBuffer, putBytes, putLatin1 } from '../shared/bytes.js';

/** `application/json\r\ncache-control: <cc>\r\nvary: <vary>\r\netag: `. */
function prefixOf(cacheControl: Uint8Array, vary: Uint8Array): Buffer {
  return Buffer.concat([
    Buffer.from('application/json\r\ncache-control: ', 'latin1'),
    cacheControl,
    Buffer.from('\r\nvary: ', 'latin1'),
    vary,
    Buffer.from('\r\netag: ', 'latin1'),
  ]);
}

// One entry per (Cache-Control, Vary) pair of value objects: two Cache-Control values (shared and
// private) and, per delivery loop (one thread, its own module), the policy's Vary and the OpenFeature
// routes' (which also names Authorization). A handful; looked up by identity.
const cachedControls: Uint8Array[] = [];
const cachedVaries: Uint8Array[] = [];
const cachedPrefixes: Buffer[] = [];

function prefixFor(cacheControl: Uint8Array, vary: Uint8Array): Buffer {
  for (let i = 0; i < cachedControls.length; i++) {
    if (cachedControls[i] === cacheControl && cachedVaries[i] === vary) return cachedPrefixes[i]!;
  }
  const prefix = prefixOf(cacheControl, vary);
  // Bounded: the values are built once per policy; past this a new one (a test's many policies) starts over.
  if (cachedControls.length >= 16) {
    cachedControls.length = 0;
    cachedVaries.length = 0;
    cachedPrefixes.length = 0;
  }
  cachedControls.push(cacheControl);
  cachedVaries.push(vary);
  cachedPrefixes.push(prefix);
  return prefix;
}

// Reused for every answer: uWS copies a header value before writeHeader returns.
let block = new ReusedBuffer(512);

/**
 * Content-Type's value with Cache-Control, Vary and ETag lines behind it (see above). The result is a
 * view of a reused buffer: valid until the next call, which is after uWS copied it.
 */
export function representationBlock(cacheControl: Uint8Array, vary: Uint8Array, etag: string): Uint8Array {
  const prefix = prefixFor(cacheControl, vary);
  const size = prefix.length + etag.length;
  if (block.size < size) block = new ReusedBuffer(size * 2);
  return block.view(putLatin1(block.bytes, etag, putBytes(block.bytes, prefix, 0)));
}

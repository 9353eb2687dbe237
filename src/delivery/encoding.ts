/**
 * Accept-Encoding → which content-codings a client takes (RFC 9110 12.5.3): q-values honoured
 * (`q=0` refuses a coding), `*` covers codings not named, `x-gzip` is gzip. Identity is always
 * possible: an answer that cannot be sent in an accepted coding goes uncompressed (a 406 would only
 * break a client that could read it).
 *
 * HOT PATH: clients send a handful of distinct header values (each browser and engine its own), so
 * each is parsed once and remembered, up to a bound past which values are parsed per request.
 */

/** gzip is acceptable. */
export const ACCEPT_GZIP = 1;
/** br is acceptable. */
export const ACCEPT_BR = 2;
/** br is at least as welcome as gzip (its q is not lower): chosen when both exist. */
export const PREFER_BR = 4;

const MEMO_LIMIT = 256;
const memo = new Map<string, number>();

export function acceptedCodings(header: string): number {
  if (header.length === 0) return 0;
  let flags = memo.get(header);
  if (flags !== undefined) return flags;
  flags = parseAcceptEncoding(header);
  if (memo.size < MEMO_LIMIT) memo.set(header, flags);
  return flags;
}

function parseAcceptEncoding(header: string): number {
  let gzipQ = -1;
  let brQ = -1;
  let starQ = -1;
  for (const item of header.split(',')) {
    const semi = item.indexOf(';');
    const name = (semi === -1 ? item : item.slice(0, semi)).trim().toLowerCase();
    const q = semi === -1 ? 1 : qValue(item.slice(semi + 1));
    if (name === 'gzip' || name === 'x-gzip') gzipQ = Math.max(gzipQ, q);
    else if (name === 'br') brQ = Math.max(brQ, q);
    else if (name === '*') starQ = Math.max(starQ, q);
  }
  if (gzipQ === -1) gzipQ = starQ;
  if (brQ === -1) brQ = starQ;
  let flags = 0;
  if (gzipQ > 0) flags |= ACCEPT_GZIP;
  if (brQ > 0) flags |= ACCEPT_BR;
  if (brQ > 0 && brQ >= gzipQ) flags |= PREFER_BR;
  return flags;
}

/** The q of `;q=0.5` style parameters (other parameters ignored); an unreadable q counts as 0. */
function qValue(params: string): number {
  for (const p of params.split(';')) {
    const eq = p.indexOf('=');
    if (eq === -1 || p.slice(0, eq).trim().toLowerCase() !== 'q') continue;
    const v = Number(p.slice(eq + 1).trim());
    return Number.isFinite(v) && v >= 0 && v <= 1 ? v : 0;
  }
  return 1;
}

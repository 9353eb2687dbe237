/**
 * Seeded generators of hostile HTTP requests for test/e2e/hostile.test.ts. Every case is built from
 * its own generator seeded with (run seed, case index), so any single case can be rebuilt from the
 * two numbers a failure prints.
 */

/** mulberry32: a small, fast, well-distributed 32-bit PRNG; plenty for fuzzing, not for secrets. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Integer in [from, to]. */
  between(from: number, to: number): number {
    return from + this.int(to - from + 1);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

export function caseRng(seed: number, index: number): Rng {
  return new Rng((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
}

// Pieces strings are made of: plain text, non-ASCII, lone surrogates, controls, JSON and URL syntax.
const STRING_PIECES = [
  'a', 'Shop', 'player-1', ' ', 'é', 'ß', 'ẞ', 'K', '\u212a', '中文', '😀', '\u0301', '\ufeff', '\ud800', '\udfff',
  '\u0000', '\u0001', '\u001f', '\u007f', '\u0085', '\u2028', '"', '\\', '/', '%', '%2F', '%00', ',', '[', ']', '{', '}',
  ':', '?', '&', '=', '#', '+', '__proto__', 'constructor', '$where', '1e400', '-0', 'x'.repeat(300),
];

export function randomString(rng: Rng, maxPieces = 8): string {
  let s = '';
  const n = rng.int(maxPieces + 1);
  for (let i = 0; i < n; i++) s += rng.pick(STRING_PIECES);
  return s;
}

const NUMBERS = [0, -0, 1, -1, 3.5, 1e308, -1e308, 5e-324, 2 ** 53, 2 ** 53 + 2, 999, 1000, 12];

export function randomJson(rng: Rng, depth = 0): unknown {
  const kind = depth > 4 ? rng.int(4) : rng.int(6);
  switch (kind) {
    case 0:
      return null;
    case 1:
      return rng.chance(0.5);
    case 2:
      return rng.pick(NUMBERS);
    case 3:
      return randomString(rng);
    case 4:
      return Array.from({ length: rng.int(5) }, () => randomJson(rng, depth + 1));
    default: {
      const o: Record<string, unknown> = {};
      const n = rng.int(6);
      for (let i = 0; i < n; i++) o[rng.chance(0.3) ? rng.pick(['u', 'p', 'v', 'level', 'country', 'tags', '__proto__', 'constructor']) : randomString(rng, 3)] = randomJson(rng, depth + 1);
      return o;
    }
  }
}

const VERSIONS = ['1.0.0', '2.3.4', '10.0.0', '0.0.0', '01.2.3', '1.2', '1.2.3.4', '1.2.3-beta', '', 'x', '999999999.999999999.999999999', '9999999999.0.0', ' 1.0.0'];

/** A user context that is usually valid, with hostile values in its fields. */
export function randomContext(rng: Rng): Record<string, unknown> {
  const ctx: Record<string, unknown> = {};
  if (rng.chance(0.8)) ctx.u = rng.chance(0.8) ? randomString(rng) : randomJson(rng);
  if (rng.chance(0.7)) {
    const p: Record<string, unknown> = {};
    if (rng.chance(0.6)) p.level = rng.chance(0.7) ? rng.int(30) : randomJson(rng);
    if (rng.chance(0.4)) p.country = rng.pick(['DE', 'FR', 'US', '', 'de', randomString(rng)]);
    if (rng.chance(0.3)) p.tags = [rng.pick(['vip', 'new', 'x']), randomJson(rng)];
    if (rng.chance(0.2)) p.__proto__ = { polluted: true };
    if (rng.chance(0.3)) p[randomString(rng, 2)] = randomJson(rng);
    ctx.p = rng.chance(0.9) ? p : randomJson(rng);
  }
  if (rng.chance(0.5)) ctx.v = rng.chance(0.8) ? rng.pick(VERSIONS) : randomJson(rng);
  return ctx;
}

const EDIT_BYTES = '{}[]",:\\ 0a\u00e9\u0000\ud800\n\t-+.eE';

/** A few random edits (insert, delete, replace) of a text. */
export function mutateText(rng: Rng, text: string): string {
  let s = text;
  const edits = rng.between(1, 4);
  for (let i = 0; i < edits; i++) {
    const at = rng.int(s.length + 1);
    const ch = EDIT_BYTES[rng.int(EDIT_BYTES.length)]!;
    const op = rng.int(3);
    if (op === 0) s = s.slice(0, at) + ch + s.slice(at);
    else if (op === 1) s = s.slice(0, at) + s.slice(at + 1 + rng.int(4));
    else s = s.slice(0, at) + ch + s.slice(at + 1);
  }
  return s;
}

/** Percent-encodes every byte outside the unreserved set; lone surrogates become their JSON escapes first. */
export function percentEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : '%' + byte.toString(16).toUpperCase().padStart(2, '0');
  }
  return out;
}

/** Cuts `buf` at up to `maxCuts` random points. */
export function randomSplit(rng: Rng, buf: Buffer, maxCuts: number): Buffer[] {
  const cuts = new Set<number>();
  const n = rng.int(maxCuts + 1);
  for (let i = 0; i < n && buf.length > 1; i++) cuts.add(1 + rng.int(buf.length - 1));
  const points = [...cuts].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let prev = 0;
  for (const p of points) {
    parts.push(buf.subarray(prev, p));
    prev = p;
  }
  parts.push(buf.subarray(prev));
  return parts;
}

/** A chunked encoding of `body` with random chunk sizes (and sometimes a zero-padded size). */
export function chunked(rng: Rng, body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let pos = 0;
  while (pos < body.length) {
    const size = Math.min(body.length - pos, rng.between(1, Math.max(1, Math.ceil(body.length / 2))));
    const sizeText = (rng.chance(0.1) ? '00' : '') + size.toString(16);
    parts.push(Buffer.from(`${sizeText}\r\n`, 'latin1'), body.subarray(pos, pos + size), Buffer.from('\r\n', 'latin1'));
    pos += size;
  }
  parts.push(Buffer.from('0\r\n\r\n', 'latin1'));
  return Buffer.concat(parts);
}

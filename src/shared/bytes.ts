/**
 * Byte copies and views for the answer path, written the way TurboFan (V8 11.3, Node 20) compiles
 * them inline.
 *
 * When TurboFan inlines a function into its caller (which it does for the small writers of an
 * answer), it does not specialise the inlined function's loads of a typed array's `set`,
 * `byteLength`, `byteOffset` or `buffer`: each becomes a call to the generic LoadIC, and
 * `byteLength` also calls its getter. The same loads in a function compiled on its own are inlined.
 * Two forms are compiled inline in both cases (--print-opt-code shows it): `length` (equal to
 * byteLength for bytes), and a `set` taken from Uint8Array.prototype once and called with `.call`.
 *
 * HOT PATH: keep typed-array property reads out of the answer writers; use these.
 */

// Called with .call on the array it writes to: taking the method off the prototype is the point.
// eslint-disable-next-line @typescript-eslint/unbound-method
const U8_SET = Uint8Array.prototype.set;
// eslint-disable-next-line @typescript-eslint/unbound-method
const BUFFER_WRITE = (Buffer.prototype as Buffer).write;

/**
 * Copies `src` into `out` at `pos` (room is the caller's); returns the position after it. Always the
 * builtin: a byte loop, even for the tail's 7-byte runs, costs more than the call (the loop turns
 * polymorphic over Buffer and Uint8Array).
 */
export function putBytes(out: Uint8Array, src: Uint8Array, pos: number): number {
  U8_SET.call(out, src, pos);
  return pos + src.length;
}

/** Writes `text` (latin1: one byte per character) into `out` at `pos`; returns the position after it. */
export function putLatin1(out: Buffer, text: string, pos: number): number {
  return pos + BUFFER_WRITE.call(out, text, pos, text.length, 'latin1');
}

/** A DataView of `bytes` (the same memory): for writers that store words (src/delivery/tail.ts). */
export function wordsOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A DataView of no bytes: the words of a buffer not made yet. */
export const EMPTY_WORDS = new DataView(new ArrayBuffer(0));

/**
 * Views of up to this many bytes are kept per length: made once, handed out again (a new Uint8Array
 * is work and garbage per answer). At most one view per length, so a buffer keeps at most this many.
 */
const KEPT_VIEW_LENGTHS = 4096;

/**
 * A buffer reused across answers, with its backing store and offset read once: views of its first
 * bytes are made without reading `buffer` and `byteOffset` (the first a call into the runtime) per
 * answer, and short ones are kept by length.
 */
export class ReusedBuffer {
  readonly bytes: Buffer;
  /** A DataView of `bytes`, for writers that store words (src/delivery/tail.ts). */
  readonly words: DataView;
  readonly store: ArrayBuffer;
  readonly offset: number;
  readonly size: number;
  private readonly views: (Uint8Array | undefined)[];

  constructor(size: number) {
    this.bytes = Buffer.allocUnsafeSlow(size);
    this.words = wordsOf(this.bytes);
    this.store = this.bytes.buffer as ArrayBuffer;
    this.offset = this.bytes.byteOffset;
    this.size = size;
    this.views = new Array<Uint8Array | undefined>(Math.min(size, KEPT_VIEW_LENGTHS - 1) + 1);
  }

  /**
   * The first `length` bytes as a plain Uint8Array (not Buffer: its subarray goes through the species
   * constructor). The same object for the same length: it is read by the callee (uWS copies it)
   * before the next answer is written.
   */
  view(length: number): Uint8Array {
    if (length >= KEPT_VIEW_LENGTHS) return new Uint8Array(this.store, this.offset, length);
    let v = this.views[length];
    if (v === undefined) {
      v = new Uint8Array(this.store, this.offset, length);
      this.views[length] = v;
    }
    return v;
  }
}

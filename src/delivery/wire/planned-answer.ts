/**
 * The bytes of a combine answered from its plan (combine-plan.ts): the plan's fixed runs in sending
 * order with the user's digits and the mapped items' heads written between them.
 *
 * A plan's fixed bytes are laid out per length of the user's part (UserLayout): the runs between two
 * mapped items joined into blocks with gaps where the digits go, so an answer is one copy per block
 * and the digits written into the gaps as words. Each layout keeps its last answers (one per set of
 * mapped heads, a few): the next one is written over the one of its heads, copying only what moved
 * (laidOutAnswer), so an answer for heads already in place is its digits alone.
 *
 * plainPlannedAnswer in reference.ts writes the same bytes plainly; test/unit/delivery/wire-differential
 * holds the two to each other.
 *
 * HOT PATH: one plannedAnswer per combine answered from a plan.
 */
import { JobKind } from '../../pool/protocol.js';
import * as bytes from '../../shared/bytes.js';
import type { WireItem } from './item-scratch.js';
import * as reply from './reply.js';
import * as tail from './tail.js';

// What an answer is written with, as this module's own consts (wire/README.md, "Module consts").
const { EMPTY_WORDS, putBytes, wordsOf } = bytes;
const { answerBuffer, answerView } = reply;
const { EMPTY_BYTES, USER_PART_MAX, checkUser, userPartLength, writeUserPart } = tail;

/**
 * The write program of a plan, one number per step: >= 0 copies `statics[n]`; STEP_USER writes the
 * user's `<uid>,"mod":<mod>`; STEP_MAPPED_BASE - k writes mapped item k's head, then its whole tail.
 */
export const STEP_USER = -1;
export const STEP_MAPPED_BASE = -2;

/** A combine plan as its answers are written from it (combine-plan.ts WirePlan is one). */
export interface WirePlan {
  readonly kind: JobKind;
  /** Fixed bytes in sending order (views of one buffer). */
  readonly statics: readonly Uint8Array[];
  /** The write program (STEP_USER, STEP_MAPPED_BASE). */
  readonly steps: Int32Array;
  /** Sum of the statics' lengths. */
  readonly staticBytes: number;
  /** STEP_USER steps (each writes the user's digits). */
  readonly userSteps: number;
  /** The items behind a mapping, in program order (their heads come with each answer). */
  readonly mapped: readonly unknown[];
  /** The wire's scratch: the layouts and their kept answers (newPlanAnswers). */
  readonly answers: PlanAnswers;
}

/** The fixed bytes laid out per length of the user's part (index: that length), built on first use. */
export interface PlanAnswers {
  readonly layouts: (UserLayout | null)[];
  layoutCount: number;
}

/**
 * A plan's fixed bytes laid out for one length of the user's part (`<uid>,"mod":<mod>`: 9 to 20
 * bytes): the runs between two mapped items each joined into one buffer with gaps where the digits
 * go. An answer is then one copy per block and the digits written into its gaps, instead of one
 * copy per id: combine-50, one id in ten mapped, makes 6 copies instead of 50.
 */
export interface UserLayout {
  readonly blocks: readonly Uint8Array[];
  /**
   * Per block, where its gaps start: arrays of small integers, read without a typed array's detached
   * check (with the length read once, combine's walk 1,632 -> 1,486 instructions a request).
   */
  readonly gaps: readonly (readonly number[])[];
  /** The write program: >= 0 copies `blocks[n]` and fills its gaps; STEP_MAPPED_BASE - k writes mapped item k. */
  readonly program: Int32Array;
  /**
   * Whether answers are written to end where the kept buffer ends (true) or to start where it starts.
   * A mapped head whose length changes moves every byte on the side that is not anchored; the side
   * with fewer fixed bytes beside the mapped items is the one left to move (anchorAtEnd).
   */
  readonly atEnd: boolean;
  /**
   * The last answers written with this layout, one per set of mapped heads (keptAnswers of them):
   * the next answer is written over the one kept for its heads (laidOutAnswer).
   */
  readonly answers: KeptAnswer[];
  /** The answer slot new heads are written into (keptAnswerFor). */
  nextAnswer: number;
}

/**
 * One answer written with a layout, kept: the next one for the same mapped heads is written over it in
 * place, and a step whose bytes already sit where they go (a block at the same position, a mapped
 * item's same head there) is not copied again; only the users' digits are. See laidOutAnswer.
 */
interface KeptAnswer {
  /**
   * The mapped heads it was last written with (PlanTag.heads, one array per combination, or the
   * planned heads' scratch array): which slot an answer takes. What sits in `answer` is still checked
   * step by step (`at`, `held`), so a slot shared by other heads is only slower, never wrong.
   */
  heads: readonly WireItem[] | null;
  answer: Uint8Array;
  /**
   * `answer`'s memory (it starts at offset 0): a view made on it with the constructor costs ~160
   * instructions against subarray's ~290 (combine makes one on 0.82 of its answers: a new length).
   */
  store: ArrayBuffer;
  words: DataView;
  /** Per program step, where its bytes sit in `answer` (-1: nowhere). */
  readonly at: Int32Array;
  /**
   * The view of `answer` last handed out and its length. Its start needs no field: a kept answer is
   * its layout's, whose answers all start at 0 or all end at `answer`'s end (UserLayout.atEnd), so the
   * same length in the same `answer` is the same view.
   */
  view: Uint8Array;
  viewLength: number;
  /**
   * Where each user part of `answer` starts (the layout's gaps and the mapped items', in program
   * order), valid while `ready`: an answer for the same heads finds every block and head where it
   * left them, so it writes the digits at these spots and nothing else (laidOutAnswer).
   */
  readonly spots: number[];
  /** Per mapped item (by its index), the front-cache entry whose bytes sit in `answer` at `at`. */
  readonly held: (WireItem | null)[];
  /** True once `answer` holds a whole answer for `held` (a write in progress or thrown clears it). */
  ready: boolean;
}

/**
 * Answers a layout keeps when the plan has mapped items (one otherwise: every answer has the same
 * heads). Users of one combination share its PlanTag's heads; with a single kept answer, two
 * combinations whose heads differ in length took turns rewriting everything after the first mapped
 * item: the bench's combine-50 (two combinations, one user in eight of the other) made 3.2 copies
 * a request, ~1,700 instructions (bench:cost --by-function, TypedArray set and memmove). A third
 * slot takes a combination that comes and goes without evicting the two that carry the traffic.
 */
const ANSWERS_PER_LAYOUT = 3;

/** Answers each layout of a plan with `mappedItems` mapped items keeps (and the plan's size charges). */
function keptAnswers(mappedItems: number): number {
  return mappedItems > 0 ? ANSWERS_PER_LAYOUT : 1;
}

/**
 * Layouts one plan keeps: uids are uniform over uint32 (9-10 digits for 98% of users) and mods mostly
 * have 3 digits, so two or three lengths carry nearly every request; a rarer length takes the
 * copy-per-run program.
 */
const LAYOUTS_PER_PLAN = 3;

/** A plan's answer scratch before its first answer. */
export function newPlanAnswers(): PlanAnswers {
  return { layouts: new Array<UserLayout | null>(USER_PART_MAX + 1).fill(null), layoutCount: 0 };
}

/**
 * Bytes a plan's answer scratch takes at most (what its cache charges): each layout's blocks (the
 * statics with gaps) and its kept answers, a quarter more for growth. `mappedBytes` bounds the mapped
 * items' heads and tails.
 */
export function planAnswersSize(kind: JobKind, staticBytes: number, mappedBytes: number, mappedItems: number): number {
  if (kind === JobKind.Plain) return 0;
  return LAYOUTS_PER_PLAN * (staticBytes + keptAnswers(mappedItems) * (((staticBytes + mappedBytes) * 5) >> 2));
}

/** The plan's layout for user parts of `userLength` bytes, or null past LAYOUTS_PER_PLAN of them. */
const layoutFor = (plan: WirePlan, userLength: number): UserLayout | null => {
  const known = plan.answers.layouts[userLength];
  if (known !== null && known !== undefined) return known;
  if (plan.answers.layoutCount >= LAYOUTS_PER_PLAN) return null;
  const layout = buildLayout(plan, userLength);
  plan.answers.layouts[userLength] = layout;
  plan.answers.layoutCount++;
  return layout;
};

function buildLayout(plan: WirePlan, userLength: number): UserLayout {
  const blocks: Uint8Array[] = [];
  const gaps: number[][] = [];
  const program: number[] = [];
  let pending: number[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    let size = 0;
    for (const s of pending) size += s === STEP_USER ? userLength : plan.statics[s]!.byteLength;
    const block = Buffer.alloc(size);
    const at: number[] = [];
    let pos = 0;
    for (const s of pending) {
      if (s === STEP_USER) {
        at.push(pos);
        pos += userLength;
      } else {
        block.set(plan.statics[s]!, pos);
        pos += plan.statics[s]!.byteLength;
      }
    }
    program.push(blocks.length);
    blocks.push(block);
    gaps.push(at);
    pending = [];
  };
  for (const step of plan.steps) {
    if (step >= 0 || step === STEP_USER) {
      pending.push(step);
      continue;
    }
    flush();
    program.push(step);
  }
  flush();
  const mapped = plan.mapped.length;
  let spots = mapped;
  for (const g of gaps) spots += g.length;
  return {
    blocks,
    gaps,
    program: Int32Array.from(program),
    atEnd: anchorAtEnd(program, blocks),
    answers: Array.from({ length: keptAnswers(mapped) }, () => newKeptAnswer(program.length, spots, mapped)),
    nextAnswer: 0,
  };
}

/**
 * Whether a layout's answers are better anchored at the buffer's end: when a mapped item's head changes
 * length (another combination), the fixed bytes before it move if the answer ends at a fixed place, the
 * bytes after it if it starts at one. Summed over the mapped items, the smaller side is the one to move.
 * Measured with bench:cost (callgrind): the bench's combine, its one mapped item second of ten, moved
 * the eight items after it on most requests (2.7 copies, ~400 instructions of memmove and ~150 cache
 * lines a request) when every answer started at the buffer's start.
 */
function anchorAtEnd(program: readonly number[], blocks: readonly Uint8Array[]): boolean {
  let fixed = 0;
  let before = 0;
  let mapped = 0;
  for (const op of program) {
    if (op >= 0) {
      fixed += blocks[op]!.byteLength;
      continue;
    }
    before += fixed;
    mapped++;
  }
  const after = mapped * fixed - before;
  return before < after;
}

function newKeptAnswer(steps: number, spots: number, mapped: number): KeptAnswer {
  return {
    heads: null,
    answer: EMPTY_BYTES,
    words: EMPTY_WORDS,
    store: EMPTY_BYTES.buffer,
    at: new Int32Array(steps).fill(-1),
    view: EMPTY_BYTES,
    viewLength: 0,
    spots: smiArray(spots),
    held: new Array<WireItem | null>(mapped).fill(null),
    ready: false,
  };
}

/**
 * `length` zeros as a packed array of small integers, grown by push (`new Array(n)` makes a holey one,
 * whose every read is checked for a hole): read without a typed array's detached and bounds checks.
 */
function smiArray(length: number): number[] {
  const a: number[] = [];
  for (let i = 0; i < length; i++) a.push(0);
  return a;
}

/**
 * The kept answer for these heads. New heads are written into one slot (nextAnswer), over whatever
 * heads it had; heads asked for again while they sit there keep it, and the next new heads take the
 * following slot. Users of many combinations, each seldom (the bench's combine: ~470 sets of heads in
 * 2,000 requests), so share one buffer as with a single kept answer, instead of spreading their writes
 * over every slot's lines; combinations that recur get a slot each.
 */
const keptAnswerFor = (layout: UserLayout, heads: readonly WireItem[]): KeptAnswer => {
  const answers = layout.answers;
  const next = layout.nextAnswer;
  for (let i = 0; i < answers.length; i++) {
    const kept = answers[i]!;
    if (kept.heads !== heads) continue;
    if (i === next) layout.nextAnswer = next + 1 === answers.length ? 0 : next + 1;
    return kept;
  }
  const kept = answers[next]!;
  kept.heads = heads;
  return kept;
};

/** The user's part of every unmapped item's tail, `<uid>,"mod":<mod>`, written once per answer. */
const userPart = Buffer.allocUnsafeSlow(32);
const userPartWords = wordsOf(userPart);
/**
 * The user's part at `at` as two or three 8-byte stores: bytes 0-7 (`c0`), then 8-15 (`c1`) when the
 * part is longer than 16, then its last eight (`c2`), overlapping what was written (the same bytes).
 * A part has 9 (one digit of uid, `,"mod":`, one of mod) to 20 bytes.
 *
 * The chunks travel as float64 because that is the widest store a DataView makes without BigInts.
 * Eight bytes of the user part are always a normal finite double, so the round trip is exact: the part
 * is ASCII (digits, `,"mod":`), every byte under 0x80, and a little-endian chunk's sign/exponent bits
 * come from its last two bytes: NaN or infinity needs the last byte's low 7 bits all set and the one
 * before it at 0xF0 or more, a subnormal needs the last byte at 0x00 or 0x80; neither occurs. They
 * are read once per answer and passed as arguments (unboxed doubles in the inlined loop): read from a
 * typed array in the loop, each was loaded and bounds-checked again per gap, as the stores before it
 * might have written there (74 instructions a gap, 45 gaps in a combine-50 answer; bench:cost).
 * Byte stores cost 1.5 against 0.4 µs a 45-gap answer. A const, not a function declaration: a
 * declaration's binding may be reassigned, and TurboFan checked it before every inlined call (combine's
 * walk -50 instructions a request).
 */
const putUser = (words: DataView, at: number, length: number, c0: number, c1: number, c2: number): void => {
  words.setFloat64(at, c0, true);
  if (length > 16) words.setFloat64(at + 8, c1, true);
  words.setFloat64(at + length - 8, c2, true);
};

/**
 * The answer's bytes: the plan's fixed runs with the user's digits and the mapped items (their heads
 * from the front cache, `heads[k]` for mapped item k) written between them. Valid until the next
 * answer (uWS copies it before end() returns): a layout's kept answer, or (a user-part length no
 * layout covers) the reply's reused buffer.
 */
export function plannedAnswer(plan: WirePlan, uid: number, mod: number, heads: readonly WireItem[]): Uint8Array {
  if (plan.kind !== JobKind.Plain) checkUser(uid, mod);
  const userLength = plan.kind === JobKind.Plain ? 0 : writeUserPart(userPartWords, 0, uid, mod);
  const layout = userLength === 0 ? null : layoutFor(plan, userLength);
  if (layout !== null) return laidOutAnswer(plan, layout, uid, mod, userLength, heads);
  const total = plannedLength(plan, uid, mod, heads);
  const out = answerBuffer(total);
  const statics = plan.statics;
  const steps = plan.steps;
  let pos = 0;
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i]!;
    if (step >= 0) {
      pos = putBytes(out, statics[step]!, pos);
    } else if (step === STEP_USER) {
      // ~15 bytes: a loop costs less than a native copy call.
      for (let b = 0; b < userLength; b++) out[pos + b] = userPart[b]!;
      pos += userLength;
    } else {
      const item = heads[STEP_MAPPED_BASE - step]!;
      pos = putBytes(out, item.head, pos);
      for (let b = 0; b < userLength; b++) out[pos + b] = userPart[b]!;
      pos += userLength;
      pos = putBytes(out, item.tailEnd, pos);
    }
  }
  if (pos !== total) throw new Error(`wire: a combine answer of ${pos} bytes, planned ${total}`);
  return answerView(pos);
}

/**
 * An answer with a layout, written over the layout's kept answer for these heads (keptAnswerFor): a
 * block is copied only when it does not already sit at its position, a mapped item's head and tailEnd
 * only when another entry or another position is there; the user's digits go into every gap. Once a
 * mapped item's length changes, everything on the layout's unanchored side of it (UserLayout.atEnd)
 * moves and is copied; otherwise (the same combinations as this answer's last user's, or heads of the
 * same length) an answer is its digits alone. Every step's bytes tile the answer in order, so a step
 * found at its position was not overwritten since it was written there.
 * Measured with bench:cost (callgrind): combine-50 copied 6 blocks and 5 heads with their tails per
 * answer, ~4,600 instructions of copy calls and copying.
 *
 * A kept answer last written whole for the same entries (most of combine-50's answers: two
 * combinations) has every step where it goes: the digits are written at its recorded spots and the
 * program is not walked (putSpots). combine-50, callgrind medians: 48,481 -> 46,202 instructions a
 * request (the walk checked 11 steps and loaded each block's gaps from a typed array); combine, whose
 * mapped head changes on most answers, takes the walk as before (43,778 -> 43,810).
 */
const laidOutAnswer = (plan: WirePlan, layout: UserLayout, uid: number, mod: number, userLength: number, heads: readonly WireItem[]): Uint8Array => {
  const kept = keptAnswerFor(layout, heads);
  // The same entries in the same layout (one user-part length) make an answer of the same length:
  // not summed again (plannedLength reads every mapped head's and tail's length, objects of their own).
  if (kept.ready && holdsHeads(kept.held, heads)) {
    putSpots(kept.words, kept.spots, userLength);
    return kept.view;
  }
  return rewrittenAnswer(layout, kept, userLength, heads, plannedLength(plan, uid, mod, heads));
};

/** Whether the mapped items' bytes in a kept answer are these heads' (the same entries, by index). */
const holdsHeads = (held: readonly (WireItem | null)[], heads: readonly WireItem[]): boolean => {
  for (let k = 0; k < held.length; k++) if (held[k] !== heads[k]) return false;
  return true;
};

/**
 * The user's part (userPart) at every spot of a kept answer, as putUser writes it. The chunks are read
 * here, not passed in: a double argument of a function not inlined arrives boxed and was unboxed again
 * for every spot (bench:cost combine-50, callgrind: 81 instructions a spot, 62 read here; the rest is
 * the DataView's map, length and detached checks, made again for every store). One loop per store
 * count, the part's length tested once: a loop of putUser calls, which tests it per spot, read ~160
 * instructions more a combine-50 answer.
 */
const putSpots = (words: DataView, spots: readonly number[], userLength: number): void => {
  const c0 = userPartWords.getFloat64(0, true);
  const c1 = userPartWords.getFloat64(8, true);
  const last = userLength - 8;
  const c2 = userPartWords.getFloat64(last, true);
  if (userLength > 16) {
    for (let k = 0; k < spots.length; k++) {
      const at = spots[k]!;
      words.setFloat64(at, c0, true);
      words.setFloat64(at + 8, c1, true);
      words.setFloat64(at + last, c2, true);
    }
  } else {
    for (let k = 0; k < spots.length; k++) {
      const at = spots[k]!;
      words.setFloat64(at, c0, true);
      words.setFloat64(at + last, c2, true);
    }
  }
};

/**
 * laidOutAnswer's way when the kept answer was last written for other heads (or never): the program
 * step by step, each step copied only where it moved or changed, the spots recorded as it goes.
 */
function rewrittenAnswer(
  layout: UserLayout,
  kept: KeptAnswer,
  userLength: number,
  heads: readonly WireItem[],
  total: number,
): Uint8Array {
  kept.ready = false;
  if (kept.answer.length < total) {
    kept.store = new ArrayBuffer(total + (total >> 2));
    kept.answer = new Uint8Array(kept.store);
    kept.words = wordsOf(kept.answer);
    kept.at.fill(-1);
    kept.viewLength = -1;
  }
  const out = kept.answer;
  const words = kept.words;
  const at = kept.at;
  const held = kept.held;
  const spots = kept.spots;
  const program = layout.program;
  const blocks = layout.blocks;
  const gaps = layout.gaps;
  const c0 = userPartWords.getFloat64(0, true);
  const c1 = userPartWords.getFloat64(8, true);
  const c2 = userPartWords.getFloat64(userLength - 8, true);
  const start = layout.atEnd ? out.length - total : 0;
  let pos = start;
  let spot = 0;
  for (let i = 0; i < program.length; i++) {
    const op = program[i]!;
    if (op >= 0) {
      const block = blocks[op]!;
      if (at[i] !== pos) {
        putBytes(out, block, pos);
        at[i] = pos;
      }
      const g = gaps[op]!;
      for (let j = 0, n = g.length; j < n; j++) {
        const to = pos + g[j]!;
        putUser(words, to, userLength, c0, c1, c2);
        spots[spot++] = to;
      }
      pos += block.length;
    } else {
      const k = STEP_MAPPED_BASE - op;
      const item = heads[k]!;
      const headLength = item.head.length;
      if (at[i] !== pos || held[k] !== item) {
        putBytes(out, item.head, pos);
        putBytes(out, item.tailEnd, pos + headLength + userLength);
        at[i] = pos;
        held[k] = item;
      }
      putUser(words, pos + headLength, userLength, c0, c1, c2);
      spots[spot++] = pos + headLength;
      pos += headLength + userLength + item.tailEnd.length;
    }
  }
  // plannedLength and the program count the same bytes; an answer anchored at the end must end there.
  if (pos - start !== total) throw new Error(`combine answer of ${pos - start} bytes, planned ${total}`);
  if (kept.viewLength !== total) {
    kept.view = new Uint8Array(kept.store, start, total);
    kept.viewLength = total;
  }
  kept.ready = true;
  return kept.view;
}

/** Bytes plannedAnswer writes for this user and these mapped heads. */
const plannedLength = (plan: WirePlan, uid: number, mod: number, heads: readonly WireItem[]): number => {
  if (plan.kind === JobKind.Plain) return plan.staticBytes;
  const user = userPartLength(uid, mod);
  let total = plan.staticBytes + plan.userSteps * user;
  for (let k = 0; k < plan.mapped.length; k++) {
    const item = heads[k]!;
    total += item.head.length + user + item.tailEnd.length;
  }
  return total;
};

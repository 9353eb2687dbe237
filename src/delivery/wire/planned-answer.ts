/**
 * The bytes of a combine answered from its plan (combine-plan.ts): the plan's fixed runs in sending
 * order with the user's digits and the mapped items' heads written between them.
 *
 * With a layout for the user part's length (plan-layout.ts), an answer is one copy per block and the
 * digits written into the gaps as words, over the answer the layout kept for the same mapped heads,
 * copying only what moved (laidOutAnswer): an answer for heads already in place is its digits alone.
 *
 * plainPlannedAnswer in reference.ts writes the same bytes plainly;
 * test/unit/delivery/wire-differential.test.ts holds the two to each other.
 *
 * HOT PATH: one plannedAnswer per combine answered from a plan.
 */
import { JobKind } from '../../pool/protocol.js';
import * as bytes from '../../shared/bytes.js';
import type { WireItem } from './item-scratch.js';
import * as planLayout from './plan-layout.js';
import { STEP_MAPPED_BASE, STEP_USER, type KeptAnswer, type UserLayout, type WirePlan } from './plan-layout.js';
import * as answerBuffers from './answer-buffer.js';
import * as tail from './tail.js';

// What an answer is written with, as this module's own consts (wire/README.md, "Module consts").
const { putBytes, wordsOf } = bytes;
const { answerBuffer, answerView } = answerBuffers;
const { keptAnswerFor, layoutFor } = planLayout;
const { checkUser, userPartLength, writeUserPart } = tail;

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
 * typed array in the loop, each would be loaded and bounds-checked again per gap, as the stores before
 * it might have written there. A const, not a function declaration: a declaration's binding may be
 * reassigned, and TurboFan checks it before every inlined call.
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
 *
 * A kept answer last written whole for the same entries has every step where it goes: the digits are
 * written at its recorded spots and the program is not walked (putSpots), so no step is checked and
 * no block's gaps are loaded from a typed array. An answer whose mapped head changed takes the walk.
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
 * here, not passed in: a double argument of a function not inlined arrives boxed and would be unboxed
 * again for every spot. One loop per store count, the part's length tested once, where a loop of
 * putUser calls tests it per spot.
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

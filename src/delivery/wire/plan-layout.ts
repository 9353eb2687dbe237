/**
 * How a combine plan's answers are laid out (planned-answer.ts writes them): the plan's write program,
 * its fixed bytes joined per length of the user's part into blocks with gaps where the digits go
 * (UserLayout), and the last answers each layout keeps to write the next one over (KeptAnswer).
 *
 * HOT PATH: layoutFor and keptAnswerFor run once per planned answer.
 */
import { JobKind } from '../../pool/protocol.js';
import * as bytes from '../../shared/bytes.js';
import type { WireItem } from './item-scratch.js';
import * as tail from './tail.js';

// What a layout is built with, as this module's own consts (wire/README.md, "Module consts").
const { EMPTY_WORDS } = bytes;
const { EMPTY_BYTES, USER_PART_MAX } = tail;

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
 * copy per id.
 */
export interface UserLayout {
  readonly blocks: readonly Uint8Array[];
  /**
   * Per block, where its gaps start: arrays of small integers, read without a typed array's detached
   * check (with the length read once).
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
export interface KeptAnswer {
  /**
   * The mapped heads it was last written with (PlanTag.heads, one array per combination, or the
   * planned heads' scratch array): which slot an answer takes. What sits in `answer` is still checked
   * step by step (`at`, `held`), so a slot shared by other heads is only slower, never wrong.
   */
  heads: readonly WireItem[] | null;
  answer: Uint8Array;
  /**
   * `answer`'s memory (it starts at offset 0): a view of a new length is made on it with the
   * constructor, cheaper than subarray (a combine makes one on most answers).
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
 * combinations whose heads differ in length would take turns rewriting everything after the first
 * mapped item. A third slot takes a combination that comes and goes without evicting the two that
 * carry the traffic.
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
export const layoutFor = (plan: WirePlan, userLength: number): UserLayout | null => {
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
 * Whether a layout's answers are better anchored at the buffer's end: when a mapped item's head
 * changes length (another combination), the fixed bytes before it move if the answer ends at a
 * fixed place, the bytes after it if it starts at one. Summed over the mapped items, the smaller
 * side is the one to move: a mapped item near the start, anchored there, would move every item
 * after it.
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
 * following slot. Users of many combinations, each seldom, so share one buffer as with a single
 * kept answer, instead of spreading their writes over every slot's lines; combinations that recur
 * get a slot each.
 */
export const keptAnswerFor = (layout: UserLayout, heads: readonly WireItem[]): KeptAnswer => {
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

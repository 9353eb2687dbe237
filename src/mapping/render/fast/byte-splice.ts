/**
 * Emits an edit tree (edit-tree.ts) over the base bytes: the output is planned as base byte ranges and
 * short new texts, its length is computed, and it is written once into a buffer of exactly that
 * size. A render-cache miss therefore costs the size of the patches plus one copy of the output:
 * untouched members between two changed ones are one range, a changed member costs its new value's
 * JSON.stringify, and nothing outside the patched paths is scanned, parsed or copied twice.
 *
 * Member order is JavaScript's, as the copy-on-write renderer and JSON.parse/JSON.stringify give it:
 * members keep their place, new members go last in the order the patches added them (also a member
 * deleted and added again), except array-index keys ("0", "12"), which JavaScript lists first and
 * ascending, so a new one is inserted among the base's.
 */
import { isArrayIndexKey, isObjectAt, objectIndex, type ByteBase, type ObjectIndex } from './byte-index.js';
import { EditKind, materialize, UNCHANGED, type Edit } from './edit-tree.js';

/**
 * The output as alternating pieces: texts[i] then base bytes [starts[i], ends[i]); `tail` ends it.
 * Adjacent base ranges are joined and adjacent texts concatenated while planning.
 */
interface Plan {
  readonly base: ByteBase;
  readonly texts: string[];
  readonly starts: number[];
  readonly ends: number[];
  /** Text not yet followed by a base range. */
  tail: string;
}

function newPlan(base: ByteBase, prefix: string): Plan {
  return { base, texts: [], starts: [], ends: [], tail: prefix };
}

function addText(plan: Plan, text: string): void {
  plan.tail += text;
}

function addRange(plan: Plan, start: number, end: number): void {
  if (start === end) return;
  const last = plan.ends.length - 1;
  if (plan.tail === '' && last >= 0 && plan.ends[last] === start) {
    plan.ends[last] = end;
    return;
  }
  plan.texts.push(plan.tail);
  plan.starts.push(start);
  plan.ends.push(end);
  plan.tail = '';
}

/**
 * Plans `prefix` + the edited base + `suffix`. Returns null when an object on the way is not in
 * canonical form (see ObjectIndex.canonical): the caller renders with the copy-on-write renderer.
 */
function planRender(base: ByteBase, root: Edit, prefix: string, suffix: string): Plan | null {
  const plan = newPlan(base, prefix);
  if (!planValue(plan, root === UNCHANGED ? undefined : root, base.rootStart, base.rootEnd)) return null;
  addText(plan, suffix);
  return plan;
}

function planValue(plan: Plan, edit: Edit | undefined, start: number, end: number): boolean {
  if (edit === undefined) {
    addRange(plan, start, end);
    return true;
  }
  if (edit.kind === EditKind.Replace) {
    addText(plan, JSON.stringify(edit.value));
    return true;
  }
  if (isObjectAt(plan.base, start)) return planMerge(plan, edit, start);
  addText(plan, JSON.stringify(materialize(edit)));
  return true;
}

/** A new member's value: a Replace's value, or a Merge with nothing under it to merge into. */
function newMemberJson(edit: Edit): string {
  return JSON.stringify(edit.kind === EditKind.Replace ? edit.value : materialize(edit));
}

function ascending(a: number, b: number): number {
  return a - b;
}

/** A Merge over the base object at `start`. */
function planMerge(plan: Plan, node: Edit, start: number): boolean {
  const index = objectIndex(plan.base, start);
  if (!index.canonical) return false;
  const children = node.children as Map<string, Edit>;
  // Changed base members by position, each with its edit (null: dropped from its place); new
  // array-index keys by value; other new members (and moved ones) last, in the order they came.
  // A changed member is sorted as position * count + its rank among the edits, which stays exact.
  const count = children.size;
  const order: number[] = [];
  const edits: (Edit | null)[] = [];
  let intKeys: string[] | null = null;
  let appended: string[] | null = null;
  for (const [key, child] of children) {
    const m = index.keys.get(key);
    const intKey = isArrayIndexKey(key);
    if (m !== undefined) {
      const movedLast = child.kind === EditKind.Replace && child.moved && !intKey;
      order.push(m * count + edits.length);
      edits.push(child.kind === EditKind.Delete || movedLast ? null : child);
      if (movedLast) (appended ??= []).push(key);
    } else if (child.kind !== EditKind.Delete) {
      if (intKey) (intKeys ??= []).push(key);
      else (appended ??= []).push(key);
    }
  }
  order.sort(ascending);
  if (intKeys !== null) intKeys.sort(compareIntKeys);

  addText(plan, '{');
  let first = true;
  let next = 0; // the first base member not emitted yet
  let c = 0;
  let k = 0;
  const total = index.keyStart.length;
  const ints = intKeys ?? NO_KEYS;
  // Indexed reads below carry `!`: k < ints.length, c < order.length, `order` values decode to a
  // base member position (< total) and an edit rank (< count = edits.length), and next < at <= total.
  while (c < order.length || k < ints.length) {
    // New array-index keys go before the first base member with a greater key.
    const insertAt = k < ints.length ? insertionPoint(index, Number(ints[k])) : total + 1;
    const changeAt = c < order.length ? Math.floor(order[c]! / count) : total + 1;
    const at = insertAt <= changeAt ? insertAt : changeAt;
    if (at > next) {
      if (!first) addText(plan, ',');
      addRange(plan, index.keyStart[next]!, index.valueEnd[at - 1]!);
      first = false;
      next = at;
    }
    if (insertAt <= changeAt) {
      const key = ints[k++]!;
      addText(plan, (first ? '' : ',') + JSON.stringify(key) + ':' + newMemberJson(children.get(key)!));
      first = false;
      continue;
    }
    const edit = edits[order[c++]! % count] as Edit | null;
    next = changeAt + 1;
    if (edit === null) continue; // deleted (or moved to the end)
    if (!first) addText(plan, ',');
    first = false;
    addRange(plan, index.keyStart[changeAt]!, index.valueStart[changeAt]!);
    if (!planValue(plan, edit, index.valueStart[changeAt]!, index.valueEnd[changeAt]!)) return false;
  }
  if (next < total) {
    if (!first) addText(plan, ',');
    addRange(plan, index.keyStart[next]!, index.valueEnd[total - 1]!);
    first = false;
  }
  if (appended !== null) {
    for (const key of appended) {
      addText(plan, (first ? '' : ',') + JSON.stringify(key) + ':' + newMemberJson(children.get(key)!));
      first = false;
    }
  }
  addText(plan, '}');
  return true;
}

const NO_KEYS: readonly string[] = [];

function compareIntKeys(a: string, b: string): number {
  return Number(a) - Number(b);
}

/** The position of the first base array-index member whose key is greater than `k`. */
function insertionPoint(index: ObjectIndex, k: number): number {
  let lo = 0;
  let hi = index.intCount;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (index.intKeys[mid]! < k) lo = mid + 1; // mid < intCount <= intKeys.length
    else hi = mid;
  }
  return lo;
}

function planLength(plan: Plan): number {
  let length = Buffer.byteLength(plan.tail, 'utf8');
  // texts, starts and ends grow together (addRange): one entry each per piece.
  for (let i = 0; i < plan.starts.length; i++) length += Buffer.byteLength(plan.texts[i]!, 'utf8') + plan.ends[i]! - plan.starts[i]!;
  return length;
}

function writePlan(plan: Plan, out: Buffer): void {
  const bytes = plan.base.bytes;
  let pos = 0;
  for (let i = 0; i < plan.starts.length; i++) {
    const text = plan.texts[i]!;
    if (text !== '') pos += out.write(text, pos, 'utf8');
    pos += bytes.copy(out, pos, plan.starts[i], plan.ends[i]);
  }
  if (plan.tail !== '') out.write(plan.tail, pos, 'utf8');
}

/**
 * `prefix` + the edited base + `suffix` as UTF-8 in a new ArrayBuffer of exactly that size (its own
 * memory, never a pooled slice, so it can be transferred to another thread), or null (see planRender).
 */
export function renderEditsOwned(base: ByteBase, root: Edit, prefix: string, suffix: string): ArrayBuffer | null {
  const plan = planRender(base, root, prefix, suffix);
  if (plan === null) return null;
  const buffer = new ArrayBuffer(planLength(plan));
  writePlan(plan, Buffer.from(buffer));
  return buffer;
}

/** The edited base as a string, or null (see planRender). */
export function renderEditsText(base: ByteBase, root: Edit): string | null {
  const plan = planRender(base, root, '', '');
  if (plan === null) return null;
  const out = Buffer.allocUnsafe(planLength(plan));
  writePlan(plan, out);
  return out.toString('utf8');
}

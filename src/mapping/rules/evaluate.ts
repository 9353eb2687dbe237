/**
 * The per-request side of a mapping: (p, v, mod) → the Combination of applied rules and variants.
 *
 * This runs for every wrapped request, so it only does cheap work in a fixed order per rule: the
 * mod table lookup (A/B tests), the app-version range (version-key comparisons), then the compiled
 * condition; the mapping's rule program (program.ts) does all of it as one generated function. The result is an interned Combination; the render cache is keyed by (revision id,
 * mapping id, combination key), so a repeat combination costs this evaluation plus one cache lookup.
 */
import { MAX_RULES } from './compile.js';
import { NO_CHOICE, PATCH_CHOICE, type CompiledMapping, type CompiledRule, type RuleProgram } from './compiled.js';
import { EMPTY_COMBINATION, EMPTY_SELECTION, newCombination, type Combination, type Selection } from './combination.js';
import { NO_VERSION_NUM, type ComparableVersion } from '../../shared/app-version.js';
import { choiceOfEdge, pathEdge, pathKey } from './interning.js';
import { PatchKind, type CompiledPatch } from '../patch/patch.js';
import { compileRuleProgram } from './program.js';
import { versionInRange } from './version-range.js';

// evaluateMapping's rule path: written and read within one call (evaluation is synchronous and
// rules are at most MAX_RULES).
const ownPath = new Int32Array(MAX_RULES);

/** An array for evaluatePath to write a rule path into (a caller keeps one and reuses it). */
export function newRulePath(): Int32Array {
  return new Int32Array(MAX_RULES);
}

/**
 * Which rules apply to this request. `version` is the request's app version (NO_VERSION when it has
 * none): a rule with an appVersion range never applies without one.
 * `mod` is meta.mod (uid % 1000).
 * HOT PATH: a repeat combination allocates nothing.
 */
export function evaluateMapping(mapping: CompiledMapping, p: Record<string, unknown>, version: ComparableVersion, mod: number): Combination {
  return combinationOfPath(mapping, ownPath, evaluatePath(mapping, p, version, mod, ownPath));
}

/**
 * The rules' half of evaluateMapping: writes the applied (rule, choice) pairs to `out` (newRulePath)
 * and returns how many. The front end looks an answer up by the path itself (src/delivery/front-cache.ts
 * pathEntryOf) before it turns the path into its Combination. HOT PATH: allocates nothing.
 */
export function evaluatePath(mapping: CompiledMapping, p: Record<string, unknown>, version: ComparableVersion, mod: number, out: Int32Array): number {
  let program = mapping.program;
  if (program === null) program = mapping.program = compileRuleProgram(mapping.rules) ?? interpreterOf(mapping.rules);
  return program(p, version, mod, out);
}

/** The interned combination of a rule path evaluatePath wrote (its first `length` edges). */
export function combinationOfPath(mapping: CompiledMapping, path: Int32Array, length: number): Combination {
  if (length === 0) return EMPTY_COMBINATION;
  const found = mapping.combinations.byPath(path, length);
  if (found !== null) return found;
  const combination = combinationForKey(mapping, pathKey(path, length));
  if (mapping.combinations.getByKey(combination.key) === combination) mapping.combinations.addPath(path, length, combination);
  return combination;
}

/**
 * The rules run one by one (ruleChoice): the reference the generated program (program.ts) is tested
 * against, and what runs where code generation is refused. Writes the edges to `out`, returns how many.
 */
export function interpretRules(rules: readonly CompiledRule[], p: Record<string, unknown>, version: ComparableVersion, mod: number, out: Int32Array): number {
  let length = 0;
  for (let i = 0; i < rules.length; i++) {
    const choice = ruleChoice(rules[i]!, p, version, mod);
    if (choice !== NO_CHOICE) out[length++] = pathEdge(i, choice);
  }
  return length;
}

function interpreterOf(rules: readonly CompiledRule[]): RuleProgram {
  return (p, version, mod, out) => interpretRules(rules, p, version, mod, out);
}

/**
 * The combination named by its key. The front end evaluates rules and sends only the key; the worker
 * that renders a miss turns it back into patches and seg entries here.
 */
export function combinationForKey(mapping: CompiledMapping, key: string): Combination {
  if (key === '') return EMPTY_COMBINATION;
  const interned = mapping.combinations.getByKey(key);
  if (interned !== undefined) return interned;
  const built = buildCombination(mapping, key);
  mapping.combinations.addByKey(key, built);
  return built;
}

/**
 * The edges of a combination's rule path (pathEdge) that chose a variant, in rule order: read from
 * its key once and memoized on it.
 */
export function variantEdgesOf(combination: Combination): Int32Array {
  const known = combination.variantEdges;
  if (known !== null) return known;
  const edges: number[] = [];
  for (const part of combination.key.split(';')) {
    if (part === '') continue;
    const dot = part.indexOf('.');
    const edge = pathEdge(Number(part.slice(0, dot)), Number(part.slice(dot + 1)));
    if (choiceOfEdge(edge) >= 0) edges.push(edge);
  }
  const built = Int32Array.from(edges);
  combination.variantEdges = built;
  return built;
}

/** NO_CHOICE: the rule does not apply; PATCH_CHOICE: its patch applies; k >= 0: variant k applies. */
function ruleChoice(rule: CompiledRule, p: Record<string, unknown>, version: ComparableVersion, mod: number): number {
  let choice = PATCH_CHOICE;
  if (rule.variantOfMod !== null) {
    choice = rule.variantOfMod[mod]!; // mod is 0..MOD_COUNT-1, the table's length
    if (choice === NO_CHOICE) return NO_CHOICE;
  }
  // By the keys: the interpreter is the reference the program's comparisons of numbers are tested against.
  if (rule.versions !== null && (version.num === NO_VERSION_NUM || !versionInRange(rule.versions, version.key))) return NO_CHOICE;
  if (rule.predicate !== null && !rule.predicate(p)) return NO_CHOICE;
  return choice;
}

function buildCombination(mapping: CompiledMapping, key: string): Combination {
  const patches: CompiledPatch[] = [];
  const segEntries: string[] = [];
  for (const part of key.split(';')) {
    if (part === '') continue;
    const dot = part.indexOf('.');
    const rule = mapping.rules[Number(part.slice(0, dot))];
    const choice = Number(part.slice(dot + 1));
    // The key was made by evaluateMapping on the same mapping id (rules are numbered alike in every
    // compilation of it): a key naming no rule or variant is a bug, reported as such.
    const chosen = rule === undefined ? undefined : choice < 0 ? rule : rule.variants[choice];
    if (chosen === undefined || chosen.patch === null) throw new Error(`combination key ${JSON.stringify(key)} names no rule of this mapping`);
    patches.push(chosen.patch);
    segEntries.push(chosen.segJson);
  }
  const whole: Selection = { key, seg: '[' + segEntries.join(',') + ']', patches, applied: null };
  return newCombination(key, patches, segEntries, patches.some((p) => p.kind === PatchKind.Json), whole);
}

/**
 * The selection of a combination of which only the patches flagged in `applied` apply (to one
 * revision): their seg entries only, or EMPTY_SELECTION when none applies.
 */
export function partialSelection(combination: Combination, applied: Uint8Array): Selection {
  let seg = '[';
  let count = 0;
  for (let i = 0; i < combination.segEntries.length; i++) {
    if (applied[i] === 0) continue;
    if (count > 0) seg += ',';
    seg += combination.segEntries[i];
    count++;
  }
  if (count === 0) return EMPTY_SELECTION;
  if (count === applied.length) return combination.whole;
  return { key: combination.key, seg: seg + ']', patches: combination.patches, applied };
}

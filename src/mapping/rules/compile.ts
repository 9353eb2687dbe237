/**
 * Mapping JSON → a compiled, validated mapping (the format of docs/api.md, "Dynamic mappings"):
 * `{"rules":[{"segment","when"?,"appVersion"?,"info"?,"disabled"?,"patch","mod"?|"variants","experiment"?}]}`.
 *
 * Compiled once per immutable mapping id (delivery thread and worker LRU) and reused for every request:
 * conditions are compiled predicates (condition/compile.ts), app-version ranges are parsed by semver and
 * compiled to version-key comparisons (version-range.ts), variant ranges become a 1000-entry lookup
 * table (mod → variant) and each seg entry is pre-serialized JSON. Validation collects every problem
 * with its rule index and path; nothing is compiled into use when any exist.
 */
import { RcdError } from '../../runtime/errors.js';
import { compileCondition } from '../condition/validate.js';
import { CombinationIndex } from './interning.js';
import { NO_CHOICE, PATCH_CHOICE, type CompiledMapping, type CompiledRule, type CompiledVariant } from './compiled.js';
import { applyPatchToValue, compilePatch, PATCH_FAILED, type CompiledPatch } from '../patch/patch.js';
import { compileVersionRange, type VersionRange } from './version-range.js';
import { Range } from './semver-classes.js';
import { childPath, isPlainObject, type MappingProblem } from '../problems.js';

export const MOD_COUNT = 1000;

const RULE_KEYS = new Set(['segment', 'when', 'appVersion', 'patch', 'variants', 'info', 'disabled', 'mod', 'experiment']);
const VARIANT_KEYS = new Set(['name', 'mod', 'patch', 'info']);
export const MAX_RULES = 1000;
/** An A/B test's explicit experiment name (docs/api.md, "Dynamic mappings"; src/exposures/naming.ts). */
const EXPERIMENT_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

export interface MappingCheck {
  /** The compiled mapping, or null when there are problems. */
  readonly mapping: CompiledMapping | null;
  readonly problems: readonly MappingProblem[];
}

/**
 * Validates and compiles a mapping. When `content` is given (the parsed JSON of the content's newest
 * revision), every patch must also apply to it on its own.
 */
export function checkMapping(raw: unknown, content?: unknown): MappingCheck {
  const problems: MappingProblem[] = [];
  if (!isPlainObject(raw)) {
    problems.push({ rule: null, path: '', reason: 'a mapping must be an object {"rules":[...]}' });
    return { mapping: null, problems };
  }
  for (const key of Object.keys(raw)) {
    if (key !== 'rules') problems.push({ rule: null, path: childPath('', key).replace(/^\./, ''), reason: 'unknown field' });
  }
  const rawRules = raw.rules;
  if (!Array.isArray(rawRules)) {
    problems.push({ rule: null, path: 'rules', reason: 'rules must be an array' });
    return { mapping: null, problems };
  }
  if (rawRules.length > MAX_RULES) {
    problems.push({ rule: null, path: 'rules', reason: `at most ${MAX_RULES} rules` });
    return { mapping: null, problems };
  }
  const rules: CompiledRule[] = [];
  for (let i = 0; i < rawRules.length; i++) {
    const rule = compileRule(rawRules[i], i, problems);
    if (rule !== null) rules.push(rule);
  }
  checkExperimentNames(rules, problems);
  if (problems.length === 0 && content !== undefined) checkAgainstContent(rules, content, problems);
  if (problems.length > 0) return { mapping: null, problems };
  const mapping: CompiledMapping = {
    rules,
    ruleCount: rules.filter((r) => !r.disabled).length,
    combinations: new CombinationIndex(),
    program: null,
    experiments: null,
  };
  return { mapping, problems };
}

/** checkMapping that throws RcdError invalid_mapping; its details are the array of every problem. */
export function compileMapping(raw: unknown, content?: unknown): CompiledMapping {
  const { mapping, problems } = checkMapping(raw, content);
  if (mapping === null) throw mappingError(problems);
  return mapping;
}

/** Compiles a mapping as stored (validated when it was written): the delivery thread and the workers each compile their own. */
export function compileStoredMapping(text: string): CompiledMapping {
  return compileMapping(JSON.parse(text) as unknown);
}

/** `problems` holds at least one problem (callers build it only when there are some). */
export function mappingError(problems: readonly MappingProblem[]): RcdError {
  const first = problems[0]!;
  const where = first.rule === null ? first.path || 'mapping' : `rule ${first.rule} (${first.path})`;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  return new RcdError('invalid_mapping', `${where}: ${first.reason}${more}`, problems);
}

function compileRule(raw: unknown, index: number, problems: MappingProblem[]): CompiledRule | null {
  const path = `rules[${index}]`;
  if (!isPlainObject(raw)) {
    problems.push({ rule: index, path, reason: 'a rule must be an object' });
    return null;
  }
  const before = problems.length;
  for (const key of Object.keys(raw)) {
    if (!RULE_KEYS.has(key)) problems.push({ rule: index, path: childPath(path, key), reason: 'unknown field' });
  }
  const segment = raw.segment;
  if (typeof segment !== 'string' || segment === '') {
    problems.push({ rule: index, path: `${path}.segment`, reason: 'segment must be a non-empty string' });
  }
  const info = raw.info;
  if (info !== undefined && typeof info !== 'string') {
    problems.push({ rule: index, path: `${path}.info`, reason: 'info must be a string' });
  }
  const disabled = raw.disabled;
  if (disabled !== undefined && typeof disabled !== 'boolean') {
    problems.push({ rule: index, path: `${path}.disabled`, reason: 'disabled must be true or false' });
  }
  const experiment = raw.experiment;
  if (experiment !== undefined) {
    if (!Object.hasOwn(raw, 'variants')) {
      problems.push({ rule: index, path: `${path}.experiment`, reason: 'experiment names an A/B test: only a rule with variants has one' });
    } else if (typeof experiment !== 'string' || !EXPERIMENT_NAME.test(experiment)) {
      problems.push({ rule: index, path: `${path}.experiment`, reason: 'experiment must be 1-100 characters of A-Z a-z 0-9 _ . : -' });
    }
  }
  const predicate = compileCondition(raw.when, `${path}.when`, index, problems);
  const versions = compileRange(raw.appVersion, `${path}.appVersion`, index, problems);

  const hasPatch = Object.hasOwn(raw, 'patch');
  const hasVariants = Object.hasOwn(raw, 'variants');
  let patch: CompiledPatch | null = null;
  let variants: CompiledVariant[] = [];
  let gate: [number, number] | null = null;
  if (hasPatch === hasVariants) {
    problems.push({ rule: index, path, reason: hasPatch ? 'has both patch and variants (use one)' : 'needs either patch or variants' });
  } else if (hasPatch) {
    patch = compilePatch(raw.patch, `${path}.patch`, index, problems);
    if (Object.hasOwn(raw, 'mod')) gate = modRange(raw.mod, `${path}.mod`, index, problems);
  } else {
    if (Object.hasOwn(raw, 'mod')) {
      problems.push({ rule: index, path: `${path}.mod`, reason: 'an A/B test gives each variant its own mod range; mod on the rule is for a patch rule' });
    }
    const segName = typeof segment === 'string' ? segment : '';
    const ruleInfo = typeof info === 'string' ? info : undefined;
    variants = compileVariants(raw.variants, `${path}.variants`, index, segName, ruleInfo, problems);
  }
  if (problems.length !== before) return null;
  const seg = segment as string;
  let variantOfMod: Int16Array | null = null;
  if (disabled === true) variantOfMod = new Int16Array(MOD_COUNT).fill(NO_CHOICE);
  else if (patch === null) variantOfMod = modTable(variants);
  else if (gate !== null) variantOfMod = new Int16Array(MOD_COUNT).fill(NO_CHOICE).fill(PATCH_CHOICE, gate[0], gate[1] + 1);
  return {
    index,
    segment: seg,
    predicate,
    versions,
    patch,
    segJson: patch === null ? '' : segEntryJson(seg, null, info as string | undefined),
    variants,
    variantOfMod,
    disabled: disabled === true,
    experiment: typeof experiment === 'string' ? experiment : null,
  };
}

/** Two rules of one mapping may not name the same experiment. */
function checkExperimentNames(rules: readonly CompiledRule[], problems: MappingProblem[]): void {
  const first = new Map<string, number>();
  for (const rule of rules) {
    const name = rule.experiment;
    if (name === null) continue;
    const earlier = first.get(name);
    if (earlier === undefined) first.set(name, rule.index);
    else problems.push({ rule: rule.index, path: `rules[${rule.index}].experiment`, reason: `experiment "${name}" is already the name of rule ${earlier}` });
  }
}

function compileRange(raw: unknown, path: string, rule: number, problems: MappingProblem[]): VersionRange | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string' || raw.trim() === '') {
    problems.push({ rule, path, reason: 'appVersion must be an npm semver range string, e.g. ">=1.2.0 <2.0.0"' });
    return null;
  }
  try {
    return compileVersionRange(new Range(raw));
  } catch {
    problems.push({ rule, path, reason: `"${raw}" is not a valid semver range` });
    return null;
  }
}

function compileVariants(
  raw: unknown,
  path: string,
  rule: number,
  segment: string,
  ruleInfo: string | undefined,
  problems: MappingProblem[],
): CompiledVariant[] {
  if (!Array.isArray(raw) || raw.length === 0) {
    problems.push({ rule, path, reason: 'variants must be a non-empty array' });
    return [];
  }
  const out: CompiledVariant[] = [];
  const names = new Set<string>();
  for (let i = 0; i < raw.length; i++) {
    const vpath = `${path}[${i}]`;
    const v: unknown = raw[i];
    if (!isPlainObject(v)) {
      problems.push({ rule, path: vpath, reason: 'a variant must be an object' });
      continue;
    }
    const before = problems.length;
    for (const key of Object.keys(v)) {
      if (!VARIANT_KEYS.has(key)) problems.push({ rule, path: childPath(vpath, key), reason: 'unknown field' });
    }
    const name = v.name;
    if (typeof name !== 'string' || name === '') {
      problems.push({ rule, path: `${vpath}.name`, reason: 'name must be a non-empty string' });
    } else if (names.has(name)) {
      problems.push({ rule, path: `${vpath}.name`, reason: `duplicate variant name "${name}"` });
    } else {
      names.add(name);
    }
    const info = v.info;
    if (info !== undefined && typeof info !== 'string') {
      problems.push({ rule, path: `${vpath}.info`, reason: 'info must be a string' });
    }
    const range = modRange(v.mod, `${vpath}.mod`, rule, problems);
    if (!Object.hasOwn(v, 'patch')) {
      problems.push({ rule, path: vpath, reason: 'a variant needs a patch' });
    }
    const patch = Object.hasOwn(v, 'patch') ? compilePatch(v.patch, `${vpath}.patch`, rule, problems) : null;
    if (problems.length !== before || patch === null || range === null) continue;
    out.push({
      name: name as string,
      lo: range[0],
      hi: range[1],
      patch,
      segJson: segEntryJson(segment, name as string, (info as string | undefined) ?? ruleInfo),
    });
  }
  checkOverlaps(out, raw, path, rule, problems);
  return out;
}

function checkOverlaps(variants: CompiledVariant[], raw: unknown[], path: string, rule: number, problems: MappingProblem[]): void {
  const sorted = variants.slice().sort((a, b) => a.lo - b.lo);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.lo <= prev.hi) {
      const at = raw.findIndex((v) => isPlainObject(v) && v.name === cur.name);
      problems.push({
        rule,
        path: `${path}[${at}].mod`,
        reason: `range [${cur.lo}, ${cur.hi}] of "${cur.name}" overlaps [${prev.lo}, ${prev.hi}] of "${prev.name}"`,
      });
    }
  }
}

/** A `mod` range: `[from, to]`, inclusive, within 0..999; null (and a problem) otherwise. */
function modRange(mod: unknown, path: string, rule: number, problems: MappingProblem[]): [number, number] | null {
  const valid =
    Array.isArray(mod) &&
    mod.length === 2 &&
    Number.isInteger(mod[0]) &&
    Number.isInteger(mod[1]) &&
    (mod[0] as number) >= 0 &&
    (mod[1] as number) <= MOD_COUNT - 1 &&
    (mod[0] as number) <= (mod[1] as number);
  if (valid) return [mod[0] as number, mod[1] as number];
  problems.push({ rule, path, reason: 'mod must be [from, to]: integers with 0 <= from <= to <= 999' });
  return null;
}

function modTable(variants: readonly CompiledVariant[]): Int16Array {
  const table = new Int16Array(MOD_COUNT).fill(NO_CHOICE);
  variants.forEach((variant, i) => table.fill(i, variant.lo, variant.hi + 1));
  return table;
}

function segEntryJson(segment: string, variant: string | null, info: string | undefined): string {
  const entry: { n: string; v: string | null; i?: string } = { n: segment, v: variant };
  if (info !== undefined) entry.i = info;
  return JSON.stringify(entry);
}

/** Every patch, on its own, must apply to the current content ("patches that do not apply are refused"). */
function checkAgainstContent(rules: readonly CompiledRule[], content: unknown, problems: MappingProblem[]): void {
  const failure: string[] = [''];
  for (const rule of rules) {
    // A disabled rule delivers nothing: the content may move on without it (the kill switch).
    if (rule.disabled) continue;
    if (rule.patch !== null) {
      if (applyPatchToValue(content, rule.patch, failure) === PATCH_FAILED) {
        problems.push({ rule: rule.index, path: `rules[${rule.index}].patch`, reason: `does not apply to the current content: ${failure[0]}` });
      }
      continue;
    }
    for (const [i, variant] of rule.variants.entries()) {
      if (applyPatchToValue(content, variant.patch, failure) === PATCH_FAILED) {
        problems.push({
          rule: rule.index,
          path: `rules[${rule.index}].variants[${i}].patch`,
          reason: `does not apply to the current content: ${failure[0]}`,
        });
      }
    }
  }
}

/**
 * What a compiled mapping is (compile.ts builds one, evaluate.ts and program.ts run it): its rules,
 * each with its compiled condition, app-version range, patch or variants and the table of what a
 * user's mod picks, and the type of the generated rule program.
 */
import type { ComparableVersion } from '../../shared/app-version.js';
import type { Predicate } from '../condition/validate.js';
import type { CompiledPatch } from '../patch/patch.js';
import type { CombinationIndex } from './interning.js';
import type { VersionRange } from './version-range.js';

export interface CompiledVariant {
  readonly name: string;
  readonly lo: number;
  readonly hi: number;
  readonly patch: CompiledPatch;
  /** This variant's seg object as JSON, e.g. `{"n":"eu","v":"A","i":"x"}`. */
  readonly segJson: string;
}

export interface CompiledRule {
  readonly index: number;
  readonly segment: string;
  /** null: matches every p. */
  readonly predicate: Predicate | null;
  /** The appVersion range; null: every app version (and requests without v). */
  readonly versions: VersionRange | null;
  /** The rule's patch (segment-only rule), or null for an A/B test. */
  readonly patch: CompiledPatch | null;
  /** The patch rule's seg JSON (`"v":null`), or "" for an A/B test. */
  readonly segJson: string;
  readonly variants: readonly CompiledVariant[];
  /**
   * What the user's mod (0..999) picks, or null when every mod gets the patch: the variant's index
   * (an A/B test), PATCH_CHOICE (a patch rule's `mod` range covers it) or NO_CHOICE (nothing: outside
   * every range, or the rule is disabled). A disabled rule or a gated patch rule costs the request
   * the same table read as an A/B test, and keeps its position, so combination keys and the preview's
   * rule numbers stay the stored rule indexes.
   */
  readonly variantOfMod: Int16Array | null;
  /** `"disabled": true`: kept in the mapping (the kill switch sets it), applied to nobody. */
  readonly disabled: boolean;
  /** The A/B test's explicit experiment name, or null (then it is named after its item and segment). */
  readonly experiment: string | null;
}

/** variantOfMod entries that are not a variant index. */
export const PATCH_CHOICE = -1;
export const NO_CHOICE = -2;

export interface CompiledMapping {
  readonly rules: readonly CompiledRule[];
  /** Rules that can apply (not disabled): the catalog's `d` is ruleCount > 0. */
  readonly ruleCount: number;
  /** Combination interning; bounded (see interning.ts). */
  readonly combinations: CombinationIndex;
  /**
   * The rules as one generated function (program.ts), built on the first evaluation (evaluate.ts):
   * null until then, and in threads that never evaluate (workers only render).
   */
  program: RuleProgram | null;
  /**
   * The experiment name of each rule for the item this mapping belongs to, built on the first
   * exposure noted (src/exposures/naming.ts); null until then, and wherever exposures are off.
   */
  experiments: ExperimentNames | null;
}

/** A mapping's experiment names for one item (src/exposures/naming.ts builds them). */
export interface ExperimentNames {
  /** The item (content id as stored) the names were made for. */
  readonly item: string;
  /** Per rule (by its position): its experiment's name, or "" for a rule without variants. */
  readonly names: readonly string[];
  /** Per rule: a hash of its name (the repeat filter's slot, src/exposures/filter.ts). */
  readonly hashes: Int32Array;
}

/** Writes the applied (rule, choice) edges of this request to `path`; returns how many. */
export type RuleProgram = (p: Record<string, unknown>, version: ComparableVersion, mod: number, path: Int32Array) => number;

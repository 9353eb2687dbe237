/**
 * Edits of one rule (or every rule) of an item's current mapping, inside the write's transaction:
 * what the kill switch (`disabled`) and a rollout's steps (a `mod` range that grows) change. The
 * mapping is read at the moment the edit applies, so edits made meanwhile by people are kept; the
 * rule is named by its index and checked by its segment (and variant), so an edit never lands on a
 * rule that has moved: it fails with target_changed instead.
 */
import { RcdError } from '../../runtime/errors.js';
import { compileMapping } from '../../mapping/index.js';
import { isPlainObject } from '../../shared/json.js';
import type { MappingResult } from '../types.js';
import { requireContent, storeMapping } from './content.js';
import { call, type Step } from './rows.js';

/** A rule's (or a variant's) state that an edit sets and a rollout's rollback restores. */
export interface RuleState {
  /** The rule's `disabled` flag. */
  readonly disabled: boolean;
  /** The rule's `mod` gate (a patch rule) or the variant's range; null: a patch rule without a gate. */
  readonly mod: readonly [number, number] | null;
}

export interface RuleEdit {
  /** The rule's index; null: every rule (the kill switch on a whole mapping). */
  readonly rule: number | null;
  /** The segment the rule must still have (checked when `rule` is set). */
  readonly segment: string | null;
  /** The variant whose range is set; null: the rule's own `mod`. */
  readonly variant: string | null;
  /** Sets the flag when given. */
  readonly disabled?: boolean;
  /** Sets the range when given; null removes a patch rule's gate. */
  readonly mod?: readonly [number, number] | null;
}

export interface RuleEditResult extends MappingResult {
  /** The target's state before the edit (the first rule's, for an edit of every rule). */
  readonly before: RuleState;
}

type RawRule = Record<string, unknown>;

/**
 * Applies the edit to the item's current mapping. Only the mapping's own rules are checked (ranges
 * that overlap, a bad index): flipping `disabled` cannot make a patch stop applying, so the content
 * is not read or checked (the kill switch is faster than any edit for it).
 */
export function* editRules(envId: string, id: string, edit: RuleEdit): Step<RuleEditResult> {
  const content = yield* requireContent(envId, id);
  const current = yield* call('getMapping', content.mapping_id);
  if (current === undefined) throw new RcdError('not_found', `content ${JSON.stringify(content.id)} has no mapping`);
  const mapping = JSON.parse(current.json) as { rules: RawRule[] };
  const targets = edit.rule === null ? mapping.rules : [ruleAt(mapping.rules, edit, content.id)];
  if (targets.length === 0) throw new RcdError('not_found', `the mapping of ${JSON.stringify(content.id)} has no rules`);
  const before = ruleState(targets[0]!, edit.variant);
  for (const rule of targets) applyEdit(rule, edit);
  const json = JSON.stringify(mapping);
  // Only `disabled` changed: counting is enough. A range changed: the mapping's own checks (overlaps).
  const ruleCount = edit.mod === undefined ? mapping.rules.filter((r) => r.disabled !== true).length : compileMapping(mapping).ruleCount;
  const hash = (yield* call('newestHash', content.content_pk)) ?? '';
  const stored = yield* storeMapping(content, hash, json, ruleCount);
  return { ...stored, before };
}

function ruleAt(rules: RawRule[], edit: RuleEdit, contentId: string): RawRule {
  const index = edit.rule as number;
  const rule = rules[index];
  if (rule === undefined) throw new RcdError('target_changed', `the mapping of ${JSON.stringify(contentId)} has no rule ${index}`);
  if (edit.segment !== null && rule.segment !== edit.segment) {
    throw new RcdError('target_changed', `rule ${index} of ${JSON.stringify(contentId)} is segment ${JSON.stringify(rule.segment)} now, not ${JSON.stringify(edit.segment)}`, {
      rule: index,
      segment: rule.segment,
    });
  }
  if (edit.variant !== null && variantOf(rule, edit.variant) === undefined) {
    throw new RcdError('target_changed', `rule ${index} of ${JSON.stringify(contentId)} has no variant ${JSON.stringify(edit.variant)} now`, { rule: index });
  }
  return rule;
}

function variantOf(rule: RawRule, name: string): RawRule | undefined {
  const variants = rule.variants;
  if (!Array.isArray(variants)) return undefined;
  return variants.find((v): v is RawRule => isPlainObject(v) && v.name === name);
}

export function ruleState(rule: RawRule, variant: string | null): RuleState {
  const holder = variant === null ? rule : variantOf(rule, variant);
  const mod = holder?.mod;
  return {
    disabled: rule.disabled === true,
    mod: Array.isArray(mod) && mod.length === 2 ? [mod[0] as number, mod[1] as number] : null,
  };
}

function applyEdit(rule: RawRule, edit: RuleEdit): void {
  if (edit.disabled !== undefined) {
    // Absent when false: a re-enabled rule reads as it did before it was disabled.
    if (edit.disabled) rule.disabled = true;
    else delete rule.disabled;
  }
  if (edit.mod === undefined) return;
  const holder = edit.variant === null ? rule : (variantOf(rule, edit.variant) as RawRule);
  if (edit.mod === null) delete holder.mod;
  else holder.mod = [edit.mod[0], edit.mod[1]];
}

/**
 * The experiments of an environment, read from its current mappings (docs/experiments.md, "The
 * readout"): every rule with `variants` is one, named by its `experiment` field when it has one,
 * else `ITEM:SEGMENT`. Rules that share a name (of one item or of several) are one experiment: the
 * first item in the store's id order names it and its first rule gives the segment and the split;
 * a variant only a later rule has is added with that rule's share. Disabled rules are listed too
 * (`disabled` is true when every rule of the experiment is disabled).
 */
import { isPlainObject } from '../shared/json.js';
import { experimentName } from './naming.js';

/** The mod has 1,000 values: a variant's share is its range's size / 1000. */
const MOD_VALUES = 1000;

export interface ExperimentVariant {
  readonly name: string;
  readonly share: number;
}

export interface Experiment {
  readonly name: string;
  /** The first item (store id order) whose mapping runs it. */
  readonly item: string;
  readonly items: readonly string[];
  readonly segment: string;
  readonly variants: readonly ExperimentVariant[];
  readonly disabled: boolean;
}

/** One item's current mapping as stored (the JSON value), in the store's id order. */
export interface ItemMapping {
  readonly item: string;
  readonly mapping: unknown;
}

interface Building {
  readonly name: string;
  readonly item: string;
  readonly items: string[];
  readonly segment: string;
  readonly variants: ExperimentVariant[];
  disabled: boolean;
}

/** Every experiment of these mappings, in name order. */
export function experimentsOf(mappings: readonly ItemMapping[]): Experiment[] {
  const byName = new Map<string, Building>();
  for (const { item, mapping } of mappings) {
    for (const rule of rulesOf(mapping)) {
      if (!Array.isArray(rule.variants) || typeof rule.segment !== 'string') continue;
      const name = experimentName(item, rule.segment, typeof rule.experiment === 'string' ? rule.experiment : undefined);
      const disabled = rule.disabled === true;
      let exp = byName.get(name);
      if (exp === undefined) {
        exp = { name, item, items: [item], segment: rule.segment, variants: [], disabled };
        byName.set(name, exp);
      } else {
        if (!exp.items.includes(item)) exp.items.push(item);
        exp.disabled &&= disabled;
      }
      for (const v of variantsOf(rule.variants)) {
        if (!exp.variants.some((known) => known.name === v.name)) exp.variants.push(v);
      }
    }
  }
  return [...byName.values()].sort((a, b) => compareText(a.name, b.name));
}

function rulesOf(mapping: unknown): Record<string, unknown>[] {
  if (!isPlainObject(mapping) || !Array.isArray(mapping.rules)) return [];
  return mapping.rules.filter(isPlainObject);
}

function variantsOf(variants: readonly unknown[]): ExperimentVariant[] {
  const out: ExperimentVariant[] = [];
  for (const v of variants) {
    if (!isPlainObject(v) || typeof v.name !== 'string' || !Array.isArray(v.mod)) continue;
    const [from, to] = v.mod as unknown[];
    if (typeof from !== 'number' || typeof to !== 'number') continue;
    out.push({ name: v.name, share: (to - from + 1) / MOD_VALUES });
  }
  return out;
}

/** Binary order of the UTF-16 text, as the store orders ids: the same everywhere, whatever the locale. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * What an experiment is called (docs/experiments.md): a mapping rule with variants is an experiment,
 * named by its explicit `experiment` field when set, otherwise `ITEM:SEGMENT` (the content id as
 * stored, a colon, the rule's segment). A name several rules share (of one item's mapping: refused;
 * of several items: allowed) is one experiment.
 *
 * The delivery loop names a mapping's experiments once per compiled mapping and item, on the first
 * exposure it notes (CompiledMapping.experiments), so that a request reads a name and its hash from
 * arrays.
 */
import type { CompiledMapping, ExperimentNames } from '../mapping/index.js';
import { xxh32String } from '../shared/xxh32.js';

/** The experiment name of an A/B test rule of `item`: its explicit name, else `item:segment`. */
export function experimentName(item: string, segment: string, explicit: string | null | undefined): string {
  return explicit ?? `${item}:${segment}`;
}

/** A name's hash as the repeat filter reads it (src/exposures/filter.ts). */
export function experimentHash(name: string): number {
  return xxh32String(name, 0x45585031) | 0;
}

/**
 * The experiment names of `mapping`'s rules for `item` (the content id as stored), memoized on the
 * compiled mapping. A mapping belongs to one item; were it asked for another, the names are built
 * again for that one.
 */
export function experimentNamesOf(item: string, mapping: CompiledMapping): ExperimentNames {
  const known = mapping.experiments;
  if (known !== null && known.item === item) return known;
  const rules = mapping.rules;
  const names = new Array<string>(rules.length);
  const hashes = new Int32Array(rules.length);
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    // A rule has a patch or variants: without a patch it is an A/B test.
    const name = rule.patch === null ? experimentName(item, rule.segment, rule.experiment) : '';
    names[i] = name;
    hashes[i] = name === '' ? 0 : experimentHash(name);
  }
  const built: ExperimentNames = { item, names, hashes };
  mapping.experiments = built;
  return built;
}

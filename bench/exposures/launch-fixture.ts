/**
 * What `bench:exposures` serves beside the suite's bundle: the launch item, one content item whose
 * mapping holds three experiments (rules with variants whose mod ranges cover 0..999, so every player
 * is exposed to all three), and the split a set of players must show in the assignment table: each
 * player's variant follows from XXH32(u) % 1000 (src/shared/identity.ts), so the expected count of
 * every variant is exact, not a statistical share.
 */
import { writeFileSync } from 'node:fs';
import { userMod, userUid } from '../../src/shared/identity.js';
import { BENCH_ENV, BENCH_KEY, buildBundle } from '../fixtures/generate.js';

export const LAUNCH_ID = 'Launch';
export const LAUNCH_ENV = BENCH_ENV;
export const LAUNCH_PATH = `/api/v1/config/${LAUNCH_ID}/dynamic`;
export const LAUNCH_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', 'x-api-key': BENCH_KEY };

export interface LaunchVariant {
  readonly name: string;
  /** The variant's mod range, both ends included. */
  readonly from: number;
  readonly to: number;
}

export interface LaunchExperiment {
  /** ITEM:SEGMENT, the name rcd gives a rule with variants that names no experiment. */
  readonly name: string;
  readonly segment: string;
  readonly variants: readonly LaunchVariant[];
}

function experiment(segment: string, variants: readonly LaunchVariant[]): LaunchExperiment {
  return { name: `${LAUNCH_ID}:${segment}`, segment, variants };
}

export const LAUNCH_EXPERIMENTS: readonly LaunchExperiment[] = [
  experiment('price', [
    { name: 'A', from: 0, to: 499 },
    { name: 'B', from: 500, to: 999 },
  ]),
  experiment('onboarding', [
    { name: 'short', from: 0, to: 332 },
    { name: 'medium', from: 333, to: 665 },
    { name: 'long', from: 666, to: 999 },
  ]),
  experiment('event-reward', [
    { name: 'control', from: 0, to: 899 },
    { name: 'double', from: 900, to: 999 },
  ]),
];

/** The launch item's document and mapping: each variant writes its number under its experiment's segment. */
function launchEntry(): unknown {
  const json = { price: { pack: 499 }, onboarding: { steps: 5 }, event: { reward: 1 }, motd: 'Season 8 is live' };
  const rules = LAUNCH_EXPERIMENTS.map((e) => ({
    segment: e.segment,
    variants: e.variants.map((v, i) => ({ name: v.name, mod: [v.from, v.to], patch: { [e.segment]: { variant: i } } })),
  }));
  return { json, mapping: { rules } };
}

/** The suite's bundle (bench/fixtures/generate.ts) with the launch item added to its environment; returns `path`. */
export function writeLaunchBundle(path: string): string {
  const bundle = buildBundle() as { environments: Record<string, { content: Record<string, unknown> }> };
  bundle.environments[LAUNCH_ENV]!.content[LAUNCH_ID] = launchEntry();
  writeFileSync(path, JSON.stringify(bundle));
  return path;
}

/** The body a launch request sends for player `u` (the wrk script writes the same bytes). */
export function launchBody(u: string): string {
  return `${LAUNCH_BODY_HEAD}${u}${LAUNCH_BODY_TAIL}`;
}
export const LAUNCH_BODY_HEAD = '{"u":"';
export const LAUNCH_BODY_TAIL = '","p":{"country":"DE","platform":"ios","level":12},"v":"2.0.0"}';

/** experiment name -> variant name -> players. */
export type Split = Map<string, Map<string, number>>;

export function emptySplit(): Split {
  return new Map(LAUNCH_EXPERIMENTS.map((e) => [e.name, new Map(e.variants.map((v) => [v.name, 0]))]));
}

/** Adds one player to `split`: the variant of each experiment its mod falls in. */
export function addPlayer(split: Split, u: string): void {
  const mod = userMod(userUid(u));
  for (const e of LAUNCH_EXPERIMENTS) {
    const v = e.variants.find((x) => mod >= x.from && mod <= x.to)!;
    const counts = split.get(e.name)!;
    counts.set(v.name, counts.get(v.name)! + 1);
  }
}

/** Where two splits differ, as "experiment variant: got G, want W" lines (empty when they match). */
export function splitDifferences(got: Split, want: Split): string[] {
  const out: string[] = [];
  for (const [name, variants] of want) {
    for (const [variant, n] of variants) {
      const g = got.get(name)?.get(variant) ?? 0;
      if (g !== n) out.push(`${name} ${variant}: ${g} rows, want ${n}`);
    }
  }
  for (const [name, variants] of got) {
    for (const [variant, n] of variants) if (want.get(name)?.get(variant) === undefined) out.push(`${name} ${variant}: ${n} rows of a variant not expected`);
  }
  return out;
}

/** Rows per experiment in `split` (the sum over its variants). */
export function rowsPerExperiment(split: Split): number[] {
  return LAUNCH_EXPERIMENTS.map((e) => [...(split.get(e.name)?.values() ?? [])].reduce((s, n) => s + n, 0));
}

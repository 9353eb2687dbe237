/**
 * `rcd experiments ENV [NAME]`: the readout of an environment's experiments from the command line
 * (docs/experiments.md, "The readout"): players per variant against the configured shares and the
 * sample ratio check, one experiment's players per day with NAME; --json prints the API's answer.
 */
import { seg } from './client.js';
import { out, positional, type Ctx } from './context.js';
import { formatTable } from './table.js';

export const EXPERIMENT_HELP = {
  experiments: `rcd experiments ENV [NAME]           the experiments of ENV's mappings: players per variant against
                                     the configured shares, the sample ratio check (MISMATCH when
                                     p < 0.001); with NAME, one experiment and its players per day`,
};

interface Variant {
  name: string;
  share: number;
  players: number;
  days: { day: string; players: number }[];
}

interface Srm {
  chiSquare: number;
  pValue: number;
  mismatch: boolean;
}

interface Experiment {
  name: string;
  item: string;
  items: string[];
  segment: string;
  disabled: boolean;
  variants: Variant[];
  players: number;
  moved: number;
  srm: Srm | null;
  firstExposure: string | null;
  lastExposure: string | null;
}

function percent(fraction: number): string {
  return `${Number((fraction * 100).toFixed(1))}%`;
}

function pText(p: number): string {
  return p !== 0 && p < 0.0001 ? p.toExponential(2) : p.toFixed(4);
}

/** The check in a few words: MISMATCH first, where a person looks. */
function srmText(srm: Srm | null): string {
  if (srm === null) return '-';
  return `${srm.mismatch ? 'MISMATCH' : 'ok'} p=${pText(srm.pValue)}`;
}

function listTable(experiments: readonly Experiment[]): string {
  return formatTable(
    ['NAME', 'ITEM', 'SEGMENT', 'DISABLED', 'PLAYERS', 'MOVED', 'VARIANTS (SHARE PLAYERS)', 'SRM', 'LAST EXPOSURE'],
    experiments.map((e) => [
      e.name,
      e.items.join(','),
      e.segment,
      e.disabled,
      e.players,
      e.moved,
      e.variants.map((v) => `${v.name} ${percent(v.share)} ${v.players}`).join(', '),
      srmText(e.srm),
      e.lastExposure,
    ]),
  );
}

function detailText(e: Experiment): string {
  let text = `experiment ${e.name}: item ${e.items.join(', ')}, segment ${e.segment}${e.disabled ? ' (disabled)' : ''}\n`;
  text += `players ${e.players}, moved ${e.moved}, first exposure ${e.firstExposure ?? '-'}, last exposure ${e.lastExposure ?? '-'}\n`;
  if (e.srm === null) text += 'sample ratio: not checked (fewer than two variants with a share, or no players)\n';
  else {
    text += `sample ratio: chi-square ${e.srm.chiSquare.toFixed(3)}, p ${pText(e.srm.pValue)}: ` +
      (e.srm.mismatch ? 'MISMATCH, the players do not split as the shares say (p < 0.001)\n' : 'ok\n');
  }
  text += '\n' + formatTable(['VARIANT', 'SHARE', 'PLAYERS', 'OF PLAYERS'],
    e.variants.map((v) => [v.name, percent(v.share), v.players, e.players === 0 ? '-' : percent(v.players / e.players)]));
  const days = [...new Set(e.variants.flatMap((v) => v.days.map((d) => d.day)))].sort();
  if (days.length > 0) {
    text += '\n' + formatTable(['DAY', ...e.variants.map((v) => v.name)],
      days.map((day) => [day, ...e.variants.map((v) => v.days.find((d) => d.day === day)?.players ?? 0)]));
  }
  return text;
}

async function experimentsCommand(ctx: Ctx): Promise<void> {
  const env = positional(ctx, 0, 'ENV');
  const name = ctx.args.positionals[1];
  const base = `environments/${seg(env)}/experiments`;
  if (name === undefined) {
    const res = await ctx.client.request<{ recording: boolean; experiments: Experiment[] }>('GET', base);
    out(ctx, res, () => (res.recording ? '' : 'not recording: the server runs without --exposures (players are 0)\n') + listTable(res.experiments));
    return;
  }
  const res = await ctx.client.request<Experiment>('GET', `${base}/${seg(name)}`);
  out(ctx, res, () => detailText(res));
}

export const EXPERIMENT_COMMANDS = { experiments: experimentsCommand };

/**
 * The readout of an environment's experiments (docs/admin.md, "Experiments"; docs/experiments.md,
 * "The readout"): the experiments its current mappings run, each with the players first exposed to
 * each variant as the exposure database counts them, and the sample ratio check. Reads only: the
 * mappings in one read transaction of the store, then the per-hour counts of the exposure database
 * (never its rows, but for the players who moved). A server without --exposures answers the same
 * experiments with `recording: false` and no players.
 */
import { RcdError } from '../../runtime/errors.js';
import type { ExposureReader, HourCount, MovedCount } from '../../exposures/db.js';
import { experimentsOf, type Experiment, type ItemMapping } from '../../exposures/experiments.js';
import { byExperiment, detailOf, readoutOf } from '../../exposures/readout.js';
import { requireEnv } from '../../store/ops/content.js';
import { call, type Step } from '../../store/ops/rows.js';
import { param, read, route, type AdminCall, type AdminContext, type AdminResult, type AdminRoute } from './admin-call.js';

/** Every item's current mapping in the environment, in the store's id order; not_found without the environment. */
function* environmentMappings(env: string): Step<ItemMapping[]> {
  yield* requireEnv(env);
  const out: ItemMapping[] = [];
  for (const content of yield* call('contentsOf', env)) {
    if (content.mapping_id === null) continue;
    const mapping = yield* call('getMapping', content.mapping_id);
    if (mapping !== undefined) out.push({ item: content.id, mapping: JSON.parse(mapping.json) as unknown });
  }
  return out;
}

async function experimentsIn(ctx: AdminContext, env: string): Promise<Experiment[]> {
  return experimentsOf(await ctx.store.readStep(() => environmentMappings(env)));
}

/**
 * The counts of the environment (of one experiment when named). A database that cannot be read is
 * 503 store_unavailable: the readout is not an answer of zeros.
 */
async function countsOf(reader: ExposureReader, env: string, experiment?: string): Promise<{ hours: HourCount[]; moved: MovedCount[] }> {
  try {
    const [hours, moved] = await Promise.all([reader.hours(env, experiment), reader.moved(env, experiment)]);
    return { hours, moved };
  } catch (err) {
    if (err instanceof RcdError) throw err;
    throw new RcdError('store_unavailable', `the exposure database cannot be read: ${err instanceof Error ? err.message : String(err)}`);
  }
}

async function listExperiments(ctx: AdminContext, c: AdminCall): Promise<AdminResult> {
  const env = param(c, 0);
  const experiments = await experimentsIn(ctx, env);
  if (ctx.exposures === null) return read({ recording: false, experiments: experiments.map((e) => readoutOf(e, [], [])) });
  const counts = await countsOf(ctx.exposures, env);
  const hours = byExperiment(counts.hours);
  const moved = byExperiment(counts.moved);
  return read({
    recording: true,
    experiments: experiments.map((e) => readoutOf(e, hours.get(e.name) ?? [], moved.get(e.name) ?? [])),
  });
}

async function getExperiment(ctx: AdminContext, c: AdminCall): Promise<AdminResult> {
  const env = param(c, 0);
  const name = param(c, 1);
  const experiment = (await experimentsIn(ctx, env)).find((e) => e.name === name);
  if (experiment === undefined) {
    throw new RcdError('experiment_not_found', `no rule of the mappings of environment ${JSON.stringify(env)} runs an experiment named ${JSON.stringify(name)}`);
  }
  if (ctx.exposures === null) return read(detailOf(experiment, [], []));
  const counts = await countsOf(ctx.exposures, env, name);
  return read(detailOf(experiment, counts.hours, counts.moved));
}

const EXPERIMENTS = 'environments/:env/experiments';

/** Readable by every token that may read the environment. */
export const EXPERIMENT_ROUTES: readonly AdminRoute[] = [
  route('GET', EXPERIMENTS, listExperiments, false, 'read', 'env'),
  route('GET', `${EXPERIMENTS}/:name`, getExperiment, false, 'read', 'env'),
];

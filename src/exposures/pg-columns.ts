/**
 * The rows of one PostgreSQL exposure insert as array literals built here (postgres.ts sends them as
 * the statement's text parameters, which PostgreSQL casts to text[], int4[] and float8[]).
 *
 * Why not the driver's arrays: postgres.js serializes an array parameter element by element, each
 * through two regular-expression replaces and a few strings, numbers included; for a batch of
 * thousands of rows that was the writer's largest cost after the garbage it makes. Here a batch names
 * each environment, experiment, variant, app version and dimensions text once (`texts`, indexed from
 * 1 as PostgreSQL's arrays are), those columns are int4 indexes into it (0, out of the array's range,
 * reads as NULL: a row without an app version), and the players are quoted only where they hold a
 * quote or a backslash. bench/exposures/pg-columns.ts measures both ways against a real PostgreSQL.
 *
 * Exact: an element is always double-quoted, so no text reads as NULL or loses its spaces, and `"`
 * and `\` are the only characters an element escapes (test/unit/exposures/pg-columns.test.ts round-
 * trips fuzzed texts through PostgreSQL). Texts go out as UTF-8 as every string the driver sends: a
 * lone surrogate as U+FFFD; a NUL is refused by PostgreSQL with its row's batch, as before.
 */
import type { ExposureRow } from './db.js';

export interface InsertColumns {
  /** text[]: each environment, experiment, variant, app version and dimensions text of the batch once. */
  readonly texts: string;
  /** int4[] indexes into `texts`, one a row. */
  readonly environments: string;
  readonly experiments: string;
  readonly variants: string;
  /** 0 for a row without an app version. */
  readonly appVersions: string;
  readonly dimensions: string;
  /** text[]: the players as sent. */
  readonly players: string;
  /** float8[]: milliseconds since the epoch. */
  readonly at: string;
}

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/** One element of an array literal: `s` double-quoted, its quotes and backslashes escaped. */
export function arrayElement(s: string): string {
  return NEEDS_ESCAPE.test(s) ? '"' + s.replace(ESCAPED, '\\$&') + '"' : '"' + s + '"';
}

/** The texts of a batch as they are named: each text's index (from 1) and the quoted elements in order. */
interface TextTable {
  readonly ids: Map<string, number>;
  readonly elements: string[];
}

function textId(table: TextTable, text: string): number {
  let id = table.ids.get(text);
  if (id === undefined) {
    table.elements.push(arrayElement(text));
    id = table.elements.length;
    table.ids.set(text, id);
  }
  return id;
}

function literal(values: { join(separator: string): string }): string {
  return '{' + values.join(',') + '}';
}

/**
 * The rows of an InsertColumns as a query reads them, its parameters $1..$8 being columnParameters:
 * one row each with e, x, p, v (environment, experiment, player, variant), t (ms), a (app version,
 * NULL for none), d (dimensions) and i (the row's 1-based position).
 */
export const COLUMN_ROWS = `SELECT ($1::text[])[e] AS e, ($1::text[])[x] AS x, p, ($1::text[])[v] AS v, t, ($1::text[])[a] AS a, ($1::text[])[d] AS d, i
  FROM unnest($2::int4[], $3::int4[], $4::text[], $5::int4[], $6::float8[], $7::int4[], $8::int4[])
       WITH ORDINALITY AS r(e, x, p, v, t, a, d, i)`;

/** The parameters of COLUMN_ROWS, in its order. */
export function columnParameters(c: InsertColumns): string[] {
  return [c.texts, c.environments, c.experiments, c.players, c.variants, c.at, c.appVersions, c.dimensions];
}

/** The columns of `rows`, in their order. */
export function insertColumns(rows: readonly ExposureRow[]): InsertColumns {
  const n = rows.length;
  const table: TextTable = { ids: new Map(), elements: [] };
  const environments = new Int32Array(n);
  const experiments = new Int32Array(n);
  const variants = new Int32Array(n);
  const appVersions = new Int32Array(n);
  const dimensions = new Int32Array(n);
  const at = new Float64Array(n);
  const players: string[] = [];
  for (let i = 0; i < n; i++) {
    const row = rows[i]!;
    environments[i] = textId(table, row.environment);
    experiments[i] = textId(table, row.experiment);
    variants[i] = textId(table, row.variant);
    appVersions[i] = row.appVersion === null ? 0 : textId(table, row.appVersion);
    dimensions[i] = textId(table, row.dimensions);
    at[i] = row.atMs;
    players.push(arrayElement(row.player));
  }
  return {
    texts: literal(table.elements),
    environments: literal(environments),
    experiments: literal(experiments),
    variants: literal(variants),
    appVersions: literal(appVersions),
    dimensions: literal(dimensions),
    players: literal(players),
    at: literal(at),
  };
}

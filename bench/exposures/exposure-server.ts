/**
 * An `rcd serve` of this checkout (or of --baseline's) for bench:exposures (bench/harness/processes.ts startServer, the
 * launch bundle imported into a SQLite store of its own), with exposures recorded where `exposures`
 * says (`--exposures`, or off when null) and its metrics on a port chosen here, so that the
 * benchmark reads the exposure counters (rcd_exposures_dropped_total and the writer's) as it runs.
 */
import { join } from 'node:path';
import { repoRoot } from '../fixtures/generate.js';
import { freePort, startServer, type Supervisor, type Target } from '../harness/processes.js';

export interface ExposureServer extends Target {
  /** The `--exposures` value, or null when off. */
  readonly exposures: string | null;
  readonly metricsUrl: string;
}

export interface ExposureServerStart {
  readonly dir: string;
  readonly bundle: string;
  /** Names the server in messages and its store file. */
  readonly label: string;
  readonly exposures: string | null;
  /** More `rcd serve` options (e.g. --exposure-queue). */
  readonly args?: readonly string[];
  /** The checkout whose server runs (built); this one when absent. */
  readonly root?: string;
}

export async function startExposureServer(sup: Supervisor, start: ExposureServerStart): Promise<ExposureServer> {
  const metricsPort = await freePort();
  const args = ['--metrics-port', String(metricsPort), ...(start.exposures === null ? [] : ['--exposures', start.exposures]), ...(start.args ?? [])];
  const store = `sqlite:${join(start.dir, `${start.label.replace(/[^A-Za-z0-9-]/g, '-')}-store.db`)}`;
  const target = await startServer(sup, { root: start.root ?? repoRoot(), store, bundle: start.bundle, threads: null, label: start.label, args });
  return { ...target, exposures: start.exposures, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
}

/** Every series of the server's metrics summed by metric name (labels ignored). */
export async function scrapeMetrics(server: ExposureServer): Promise<Map<string, number>> {
  const res = await fetch(server.metricsUrl, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const value = Number(m[2]);
    if (Number.isFinite(value)) sums.set(m[1]!, (sums.get(m[1]!) ?? 0) + value);
  }
  return sums;
}

/** The exposure counters of the design (docs/experiments.md), 0 when the server does not report one. */
export interface ExposureCounters {
  /** Rows the loops handed to the writer. */
  readonly queued: number;
  /** Rows the loops dropped because the writer's queue was full. */
  readonly dropped: number;
  /** Rows the writer inserted (players first seen). */
  readonly written: number;
  readonly writeFailures: number;
  /** Rows the writer holds now. */
  readonly queueRows: number;
}

export async function exposureCounters(server: ExposureServer): Promise<ExposureCounters> {
  const m = await scrapeMetrics(server);
  return {
    queued: m.get('rcd_exposures_total') ?? 0,
    dropped: m.get('rcd_exposures_dropped_total') ?? 0,
    written: m.get('rcd_exposure_rows_written_total') ?? 0,
    writeFailures: m.get('rcd_exposure_write_failures_total') ?? 0,
    queueRows: m.get('rcd_exposure_queue_rows') ?? 0,
  };
}

/**
 * The exposure database as the readout opens it: the reader of its kind, loaded and connected at
 * the first read (a server that is never asked for a readout loads neither driver for it, and an
 * exposure database that is down does not hold up the start).
 */
import type { ExposureTotals, VariantPlayers } from './count-rows.js';
import type { ExposureReader, HourCount, MovedCount } from './db.js';

/** Where the exposures are (ServeConfig.exposures, or the part of it a reader needs). */
export interface ExposureSource {
  readonly url: string;
  readonly kind: 'sqlite' | 'postgres';
}

async function openReader(source: ExposureSource): Promise<ExposureReader & ExposureTotals> {
  if (source.kind === 'postgres') {
    const { PostgresExposureReader } = await import('./postgres-reader.js');
    return new PostgresExposureReader(source.url);
  }
  const { SqliteExposureReader, sqliteExposurePath } = await import('./sqlite-reader.js');
  return new SqliteExposureReader(sqliteExposurePath(source.url));
}

/** A reader of `source` that opens it at its first read. */
export class LazyExposureReader implements ExposureReader, ExposureTotals {
  private opened: Promise<ExposureReader & ExposureTotals> | null = null;

  constructor(private readonly source: ExposureSource) {}

  private reader(): Promise<ExposureReader & ExposureTotals> {
    this.opened ??= openReader(this.source);
    return this.opened;
  }

  async hours(environment: string | null, experiment?: string): Promise<HourCount[]> {
    return (await this.reader()).hours(environment, experiment);
  }

  async moved(environment: string | null, experiment?: string): Promise<MovedCount[]> {
    return (await this.reader()).moved(environment, experiment);
  }

  async totals(): Promise<VariantPlayers[]> {
    return (await this.reader()).totals();
  }

  async close(): Promise<void> {
    const opened = this.opened;
    this.opened = null;
    if (opened !== null) await (await opened).close();
  }
}

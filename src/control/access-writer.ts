/**
 * The access log's writer (--access-log), in the control thread: the delivery loops send the
 * records they sampled every ACCESS_REPORT_MS (src/delivery/access-log.ts); here each becomes one
 * line on stdout, so formatting and the write happen off the delivery loops. A record holds the API
 * key's id, never the key.
 */
import { accessLogger, type LogFormat } from '../runtime/log.js';
import type { AccessRecord } from './protocol.js';

export function accessWriter(format: LogFormat): (records: readonly AccessRecord[]) => void {
  const logger = accessLogger(format);
  return (records) => {
    for (const r of records) {
      logger.info(
        {
          time: new Date(r.at).toISOString(),
          loop: r.loop,
          route: r.route,
          status: r.status,
          outcome: r.outcome,
          bytes: r.bytes,
          durationMs: Math.round(r.durationMs * 1000) / 1000,
          keyId: r.keyId,
        },
        'access',
      );
    }
  };
}

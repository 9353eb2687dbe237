/**
 * Start-up, shutdown and error lines. The request path does not log (a log line per request would
 * cost more than the request); failures there are counted and logged once per second at most.
 *
 * Until `configureLog` runs (the `rcd` management commands, and `rcd serve` before its
 * configuration is read), lines are plain `rcd: ...` text. `rcd serve` then logs through pino:
 * `json` (one JSON object a line: level, time, pid, msg; the default when stdout is not a
 * terminal, as under systemd/journald or a log shipper) or `pretty` (the plain lines, through
 * pino-pretty; the default on a terminal). Info and debug go to stdout, warnings and errors to stderr.
 * Lines are written synchronously, by the thread that logs them (the control thread and each extra
 * delivery loop configure their own logger): one write(2) a line, so lines of threads never mix,
 * and none is lost when the process exits. No thread writes another thread's lines: the delivery
 * loop of the main thread spends nothing on the control thread's audit lines.
 *
 * No secret is ever passed to these functions: keys, the admin token, passphrases and passwords are
 * named by where they live (a file, a key id, a URL without its password), never by their value.
 */
import { createRequire } from 'node:module';
import type { Level, Logger } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

const require = createRequire(import.meta.url);

/** pino, loaded when a thread first configures a logger: the management commands write plain lines and never load it. */
function pinoModule(): (typeof import('pino'))['pino'] {
  return (require('pino') as typeof import('pino')).pino;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = 'json' | 'pretty';

export interface LogSettings {
  readonly level: LogLevel;
  readonly format: LogFormat;
}

let logger: Logger | null = null;
let format: LogFormat | null = null;

/** Records carry their level as a label (the formatter below), so pretty lines are keyed by it. */
const PRETTY_PREFIX: Record<string, string> = { debug: 'rcd: debug: ', info: 'rcd: ', warn: 'rcd: warning: ', error: 'rcd: error: ', fatal: 'rcd: error: ' };

/** The pretty line of a record: as the plain lines always read (`rcd: error: ...`), fields after it. */
function prettyMessage(record: Record<string, unknown>, messageKey: string): string {
  const message = record[messageKey];
  return (PRETTY_PREFIX[String(record.level)] ?? 'rcd: ') + (typeof message === 'string' ? message : '');
}

/**
 * pino-pretty, loaded on first use: JSON logging (the default off a terminal, as under systemd) does
 * not pay its ~50 ms of module loading in every thread that logs.
 */
function pinoPretty(options: PrettyOptions): NodeJS.WritableStream {
  return (require('pino-pretty') as typeof import('pino-pretty')).build(options);
}

function prettyStream(fd: 1 | 2): NodeJS.WritableStream {
  return pinoPretty({
    destination: fd,
    sync: true,
    colorize: false,
    ignore: 'time,pid,hostname,level',
    hideObject: true,
    messageFormat: prettyMessage,
  });
}

/** Switches to pino with these settings (each thread that logs calls it: loggers are per thread). */
export function configureLog(settings: LogSettings): void {
  const pino = pinoModule();
  const out = settings.format === 'json' ? pino.destination({ fd: 1, sync: true }) : prettyStream(1);
  const err = settings.format === 'json' ? pino.destination({ fd: 2, sync: true }) : prettyStream(2);
  logger = pino(
    {
      level: settings.level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // dedupe: a line goes to the one stream of the highest level it reaches (errors: stderr only).
    pino.multistream(
      [
        { level: 'debug', stream: out },
        { level: 'warn', stream: err },
      ],
      { dedupe: true },
    ),
  );
  format = settings.format;
}

/** The pretty line of an access record: `rcd: access` and its fields as name=value. */
function prettyAccess(record: Record<string, unknown>): string {
  const r = record as Record<string, string | number>;
  return `rcd: access ${r.time} route=${r.route} status=${r.status} outcome=${r.outcome} bytes=${r.bytes} ms=${r.durationMs} key=${r.keyId} loop=${r.loop}`;
}

/**
 * The access log's own logger (--access-log), in the control thread: on stdout, in the given format,
 * at every --log-level (turning the access log on is asking for its lines). Each record carries the
 * time its request ended, so pino adds none.
 */
export function accessLogger(logFormat: LogFormat): Logger {
  const pino = pinoModule();
  const stream =
    logFormat === 'json'
      ? pino.destination({ fd: 1, sync: true })
      : pinoPretty({ destination: 1, sync: true, colorize: false, ignore: 'time,pid,hostname,level', hideObject: true, messageFormat: prettyAccess });
  return pino({ level: 'info', base: { pid: process.pid }, timestamp: false, formatters: { level: (label) => ({ level: label }) } }, stream);
}

/** True when lines are meant for a person (plain text or pretty), false for JSON. */
export function humanLog(): boolean {
  return format !== 'json';
}

function write(level: Level, line: string, fields?: Record<string, unknown>): void {
  if (logger === null) {
    if (level === 'debug') return;
    const prefix = level === 'error' || level === 'fatal' ? 'rcd: error: ' : level === 'warn' ? 'rcd: warning: ' : 'rcd: ';
    (level === 'info' ? process.stdout : process.stderr).write(`${prefix}${line}\n`);
    return;
  }
  if (fields === undefined) logger[level](line);
  else logger[level](fields, line);
}

export function logDebug(line: string, fields?: Record<string, unknown>): void {
  write('debug', line, fields);
}

export function logInfo(line: string, fields?: Record<string, unknown>): void {
  write('info', line, fields);
}

export function logError(line: string, fields?: Record<string, unknown>): void {
  write('error', line, fields);
}

/** Something the operator should fix that does not stop the server (a certificate past its end date). */
export function logWarning(line: string, fields?: Record<string, unknown>): void {
  write('warn', line, fields);
}

/** Logs an unexpected request-path failure, at most once per interval, with a count of the others. */
export function rateLimitedErrorLogger(intervalMs: number): (err: unknown) => void {
  let last = 0;
  let suppressed = 0;
  return (err: unknown) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      suppressed++;
      return;
    }
    last = now;
    const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
    logError(`${detail}${suppressed > 0 ? ` (and ${suppressed} more since the last report)` : ''}`);
    suppressed = 0;
  };
}

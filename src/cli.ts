/**
 * `rcd`: serve, import and export work on a store directly; every other command is a management
 * command spoken to a running server's admin API (src/admin/client/commands.ts).
 *
 * Each command loads what it needs when it runs: `rcd serve` loads neither the admin client nor the
 * store and bundle modules in its main thread (the control thread opens the store), which kept
 * ~0.1-0.2 s of module loading (zod, better-sqlite3, postgres.js) ahead of every start.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { SERVE_OPTIONS, buildServeConfig, ConfigError, resolveOptions, StartupError, type OptionSpec } from './runtime/config.js';
import { RcdError } from './runtime/errors.js';
import { configureLog, logError, logInfo } from './runtime/log.js';

const STORE_OPTION: OptionSpec = SERVE_OPTIONS[0]!;
/** Flags of `rcd export` only (no environment variable: they name what to write, not where). */
const CLIENT_DEFAULTS_FLAGS: readonly OptionSpec[] = [
  { flag: 'client-defaults', env: '', fallback: '', help: 'ENV: write the client SDK defaults of ENV' },
  { flag: 'app-version', env: '', fallback: '', help: 'with --client-defaults: the revisions an app of this version gets' },
];

const USAGE = `rcd — remote configuration delivery server

Usage:
  rcd serve [options]            run the delivery API (and the admin API)
  rcd import FILE [--store URL]  import a bundle into a store (idempotent)
  rcd export [--store URL]       write a bundle of the store to stdout (API keys are not exported)
  rcd export --client-defaults ENV [--app-version X.Y.Z] [--store URL]
                                 the client SDK's first-launch values of ENV (docs/client.md)
  rcd migrate --from URL --to postgres://...
                                 copy a store (e.g. sqlite:PATH) into an empty PostgreSQL database, keys included
  rcd <command> --help           options of one command
  rcd --version                  the installed version

  rcd import FILE --admin-url URL / rcd export --admin-url URL
                                 the same through a running server's admin API (edits live at once)

Every serve option also reads an environment variable (rcd serve --help lists them).

`;

function optionHelp(specs: readonly OptionSpec[]): string {
  return specs
    .map((s) => `  --${s.flag.padEnd(18)} ${s.help}\n  ${' '.repeat(20)} env ${s.env}, default ${s.fallback === '' ? '(none)' : s.fallback}`)
    .join('\n');
}

function parseFlags(args: string[], specs: readonly OptionSpec[]): { flags: Record<string, string | boolean | undefined>; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean' }> = { help: { type: 'boolean' } };
  for (const s of specs) options[s.flag] = { type: 'string' };
  const parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  return { flags: parsed.values, positionals: parsed.positionals };
}

async function serve(args: string[]): Promise<number> {
  const { flags } = parseFlags(args, SERVE_OPTIONS);
  if (flags.help === true) {
    process.stdout.write(`rcd serve [options]\n\n${optionHelp(SERVE_OPTIONS)}\n`);
    return 0;
  }
  const config = buildServeConfig(resolveOptions(SERVE_OPTIONS, flags, process.env));
  configureLog({ level: config.logLevel, format: config.logFormat });
  // Loaded here, not at the top: management commands then start without loading uWS and the pool.
  const { startServer } = await import('./server.js');
  // Listening for signals before the server starts: a SIGTERM that arrives while it starts (or the
  // instant it prints "listening on") must stop it cleanly, not end the process with the default action.
  let signalled: string | null = null;
  let onStop: (reason: string, code: number) => void = (reason) => {
    signalled ??= reason;
  };
  process.once('SIGTERM', () => onStop('SIGTERM received', 0));
  process.once('SIGINT', () => onStop('SIGINT received', 0));
  // SIGHUP reloads the certificates; its default action (ending the process) never applies, also
  // while the server starts (the files are read then anyway).
  let onReload: () => void = () => undefined;
  process.on('SIGHUP', () => onReload());
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config);
  } catch (err) {
    // Everything is released by now; exit at once rather than wait for a stray handle to let go.
    logError(describe(err));
    process.stdout.write('', () => process.exit(1));
    return 1;
  }
  const running = server;
  onReload = (): void => {
    if (config.tls === null && config.adminTls === null && config.metricsTls === null) logInfo('SIGHUP: no TLS listener configured, nothing to reload');
    else running.reloadTls();
  };
  const code = await new Promise<number>((resolve) => {
    let stopping = false;
    onStop = (reason: string, code: number): void => {
      if (stopping) return;
      stopping = true;
      logInfo(`${reason}: no new connections, finishing in-flight requests`);
      // Watchdog: if draining itself hangs, the process still ends (an orchestrator is waiting on it).
      setTimeout(() => {
        logError('shutdown did not finish in time; exiting');
        process.exit(1);
      }, config.shutdownTimeoutMs + SHUTDOWN_GRACE_MS).unref();
      running.close().then(
        () => resolve(code),
        (err: unknown) => {
          logError(`shutdown: ${(err as Error).message}`);
          resolve(1);
        },
      );
    };
    if (signalled !== null) onStop(signalled, 0);
    // Without its control thread the server can neither take admin writes nor record anything.
    void running.fatal.then(() => onStop('stopping', 1));
  });
  logInfo('stopped');
  // Exit explicitly once everything is released: a stray handle (a native addon's timer, a client
  // socket the kernel still holds) must not keep a stopped server alive.
  process.stdout.write('', () => process.exit(code));
  return code;
}

/** Time allowed beyond --shutdown-timeout for releasing the pool and the store. */
const SHUTDOWN_GRACE_MS = 5000;

async function importCommand(args: string[]): Promise<number> {
  const { flags, positionals } = parseFlags(args, [STORE_OPTION]);
  if (flags.help === true || positionals.length !== 1) {
    process.stdout.write(`rcd import FILE [--store URL]\n\n${optionHelp([STORE_OPTION])}\n`);
    return flags.help === true ? 0 : 2;
  }
  const storeUrl = resolveOptions([STORE_OPTION], flags, process.env).get('store')!;
  const { openStore } = await import('./store/index.js');
  const store = await openStore(storeUrl);
  try {
    const bundle: unknown = JSON.parse(readFileSync(positionals[0]!, 'utf8'));
    const report = await store.importBundle(bundle);
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

async function exportCommand(args: string[]): Promise<number> {
  const { flags } = parseFlags(args, [STORE_OPTION, ...CLIENT_DEFAULTS_FLAGS]);
  if (flags.help === true) {
    process.stdout.write(`rcd export [--store URL] [--client-defaults ENV [--app-version X.Y.Z]]\n\nWrites a bundle to stdout. API keys are stored as SHA-256 digests and cannot be exported.\nWith --client-defaults: the first-launch values of ENV for the client SDK instead (docs/client.md).\n\n${optionHelp([STORE_OPTION])}\n`);
    return 0;
  }
  const storeUrl = resolveOptions([STORE_OPTION], flags, process.env).get('store')!;
  const { openStore } = await import('./store/index.js');
  const store = await openStore(storeUrl);
  try {
    const bundle = await store.exportBundle();
    const env = flags['client-defaults'];
    let out: unknown = bundle;
    if (typeof env === 'string') {
      // Loaded only for --client-defaults: a plain export does not need it.
      const { clientDefaults } = await import('./store/bundle/client-defaults.js');
      out = clientDefaults(bundle, env, typeof flags['app-version'] === 'string' ? flags['app-version'] : null, new Date());
    }
    process.stdout.write(JSON.stringify(out, null, 2) + '\n');
    return 0;
  } finally {
    await store.close();
  }
}

async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { from: { type: 'string' }, to: { type: 'string' }, help: { type: 'boolean' } }, strict: true });
  if (values.help === true || values.from === undefined || values.to === undefined) {
    process.stdout.write(
      'rcd migrate --from URL --to postgres://user:password@host:port/database\n\n' +
        'Copies every environment, revision, mapping and active API key (as its digest) of the store --from\n' +
        'into the empty PostgreSQL database --to, in one transaction. Stop the servers writing to --from first.\n',
    );
    return values.help === true ? 0 : 2;
  }
  const { migrateStore } = await import('./store/migrate.js');
  const report = await migrateStore(values.from, values.to);
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + (await adminCommands()).ADMIN_USAGE);
      return command === undefined ? 2 : 0;
    case '--version':
    case 'version':
      process.stdout.write(`${packageVersion()}\n`);
      return 0;
    case 'serve':
      return serve(rest);
    case 'import':
      return viaAdmin(rest) ? (await adminCommands()).runAdminCommand(argv) : importCommand(rest);
    case 'export':
      return viaAdmin(rest) ? (await adminCommands()).runAdminCommand(argv) : exportCommand(rest);
    case 'migrate':
      return migrateCommand(rest);
    default: {
      const admin = await adminCommands();
      if (admin.ADMIN_COMMANDS.includes(command)) return admin.runAdminCommand(argv);
      process.stderr.write(`rcd: unknown command "${command}"\n\n${USAGE}`);
      return 2;
    }
  }
}

function adminCommands(): Promise<typeof import('./admin/client/commands.js')> {
  return import('./admin/client/commands.js');
}

/** The version in package.json: two folders up from dist/src/cli.js, where an install keeps it too. */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** import/export go through the admin API when an admin URL is named, else straight to the store. */
function viaAdmin(args: string[]): boolean {
  return args.some((a) => a === '--admin-url' || a.startsWith('--admin-url='));
}

function describe(err: unknown): string {
  if (err instanceof RcdError) {
    const details = err.details === undefined ? '' : '\n' + JSON.stringify(err.details, null, 2);
    return `${err.code}: ${err.message}${details}`;
  }
  if (err instanceof ConfigError || err instanceof StartupError) return err.message;
  if (err instanceof Error && 'code' in err && err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return err.message;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    logError(describe(err));
    process.exitCode = 1;
  },
);

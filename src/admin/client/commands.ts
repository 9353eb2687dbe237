/**
 * `rcd env|key|content|mapping|sync|webhook|token|audit|import|export` (and, in schedule-commands.ts,
 * `schedule|rollout|kill|preview`; in experiment-commands.ts, `experiments`): the management CLI. It only speaks
 * to a running server's admin API (never to the store directly), so every change it makes goes
 * through the same validation, audit log, webhooks and "live at once" path as the console's.
 *
 * Output: human-readable tables by default, the server's JSON with --json. Exit codes: 0 success,
 * 1 the server refused or could not be reached (its message on stderr), 2 usage error.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { AdminClient, AdminClientError, DEFAULT_ADMIN_URL, seg } from './client.js';
import { formatTable } from './table.js';
import { readAdminToken } from '../token.js';
import { flag, out, parseArgs, positional, sub, UsageError, type CliIO, type Ctx, type Parsed } from './context.js';
import { SCHEDULE_COMMANDS, SCHEDULE_HELP } from './schedule-commands.js';
import { EXPERIMENT_COMMANDS, EXPERIMENT_HELP } from './experiment-commands.js';

const PROCESS_IO: CliIO = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
  env: process.env,
  readInput: (file) => (file === '-' ? readStdin() : readFile(file)),
};

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const COMMON = `Common options:
  --admin-url URL   admin API of the running server (env RCD_ADMIN_URL, default ${DEFAULT_ADMIN_URL})
  --data-dir DIR    where the server keeps admin-token (env RCD_DATA_DIR, default ./data);
                    RCD_ADMIN_TOKEN, when set, is used instead
  --json            print the server's JSON instead of a table
  --help            this help`;

const HELP: Record<string, string> = {
  env: `rcd env ls
rcd env create ENV
rcd env rm ENV [--force]     (refused while ENV holds content, unless --force)`,
  key: `rcd key create --env ENV   prints the new API key: it is shown this once only
rcd key ls --env ENV        ids, creation and last use (never the key)
rcd key revoke KEY_ID --env ENV   refused by the delivery API from the next request on`,
  content: `rcd content put FILE --env ENV --id ID [--min-app-version X.Y.Z]   FILE is JSONC, - for stdin
rcd content get --env ENV --id ID [--revision N]   prints the newest (or revision N's) stored text
rcd content ls --env ENV
rcd content rm --env ENV --id ID
rcd content history --env ENV --id ID
rcd content rollback --env ENV --id ID --to N    makes a copy of revision N the newest`,
  mapping: `rcd mapping put FILE --env ENV --id ID     FILE is the mapping JSON ({"rules":[...]}), - for stdin
rcd mapping get --env ENV --id ID
rcd mapping rm --env ENV --id ID`,
  sync: `rcd sync FROM TO [IDS...]    copies the newest revisions and mappings (all ids when none given)`,
  webhook: `rcd webhook add URL --events E1,E2 [--secret S]   events: content.updated, content.deleted,
                                                  mapping.updated, environment.synced,
                                                  schedule.created, schedule.applied,
                                                  schedule.failed, schedule.cancelled;
                                                  without --secret one is generated and shown once
rcd webhook ls
rcd webhook rm ID
rcd webhook dead-letters [--limit N]             deliveries that failed every attempt (newest first),
                                                  and how many are still pending`,
  token: `rcd token create NAME --role read|editor|admin [--env ENV1,ENV2]
                                 prints the new admin token: it is shown this once only;
                                 without --env the token may act on every environment
rcd token ls                     names, roles, scopes (never the tokens)
rcd token revoke NAME            refused by the admin API from the next call on`,
  audit: `rcd audit [--limit N] [--before ID]    newest first`,
  import: `rcd import FILE --admin-url URL     imports a bundle through a running server (- for stdin)`,
  export: `rcd export --admin-url URL [--out FILE]   writes the bundle (API keys are never exported)
rcd export --client-defaults ENV [--app-version X.Y.Z] --admin-url URL [--out FILE]
                                            the client SDK's first-launch values of ENV`,
  ...SCHEDULE_HELP,
  ...EXPERIMENT_HELP,
};

/** The admin part of `rcd --help`. */
export const ADMIN_USAGE = `Management commands (talk to a running server's admin API):
${Object.values(HELP).join('\n')}

${COMMON}
`;

export const ADMIN_COMMANDS: readonly string[] = Object.keys(HELP);

/** Runs one management command; resolves to the process exit code. */
export async function runAdminCommand(argv: string[], io: CliIO = PROCESS_IO): Promise<number> {
  const command = argv[0];
  if (command === undefined || !(command in HELP)) {
    io.stderr(`rcd: unknown command ${command === undefined ? '(none)' : JSON.stringify(command)}\n\n${ADMIN_USAGE}`);
    return 2;
  }
  let args: Parsed;
  try {
    args = parseArgs(argv.slice(1));
  } catch (err) {
    io.stderr(`rcd ${command}: ${(err as Error).message}\n\n${HELP[command]}\n\n${COMMON}\n`);
    return 2;
  }
  if (args.flags.has('help')) {
    io.stdout(`${HELP[command]}\n\n${COMMON}\n`);
    return 0;
  }
  const json = args.flags.get('json') === 'true';
  try {
    const client = makeClient(args, io);
    await COMMANDS[command as keyof typeof COMMANDS]({ io, args, json, client });
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`rcd ${command}: ${err.message}\n\n${HELP[command]}\n`);
      return 2;
    }
    if (err instanceof AdminClientError) {
      io.stderr(json && err.envelope !== undefined ? JSON.stringify(err.envelope) + '\n' : describeError(err));
      return 1;
    }
    io.stderr(`rcd ${command}: ${(err as Error).message}\n`);
    return 1;
  }
}

function describeError(err: AdminClientError): string {
  let text = `rcd: ${err.message}${err.status === 0 ? '' : ` (${err.code}, HTTP ${err.status})`}\n`;
  if (Array.isArray(err.details)) {
    for (const d of err.details) text += `  - ${typeof d === 'string' ? d : JSON.stringify(d)}\n`;
  } else if (err.details !== undefined && err.details !== null) {
    text += `  ${JSON.stringify(err.details)}\n`;
  }
  return text;
}

function makeClient(args: Parsed, io: CliIO): AdminClient {
  const baseUrl = args.flags.get('admin-url') ?? io.env.RCD_ADMIN_URL ?? DEFAULT_ADMIN_URL;
  const dataDir = args.flags.get('data-dir') ?? io.env.RCD_DATA_DIR ?? './data';
  const token = readAdminToken(dataDir, io.env);
  if (token === undefined) {
    throw new Error(`no admin token: set RCD_ADMIN_TOKEN or point --data-dir at the server's data directory (no ${dataDir}/admin-token)`);
  }
  return new AdminClient({ baseUrl, token, actor: 'cli' });
}

// ---- commands -------------------------------------------------------------------------------

interface EnvironmentRow { id: string; createdAt: string; contentCount: number; keyCount: number }
interface KeyRow { id: string; createdAt: string; lastUsedAt: string | null; revokedAt: string | null }
interface ContentRow { id: string; hash: string; revisionCount: number; hasMapping: boolean; updatedAt: string }
interface RevisionRow { number: number; hash: string; minAppVersion: string | null; createdAt: string; text: string }
interface ContentDetail { id: string; envId: string; revisions: RevisionRow[]; mapping: unknown }
interface PutResult { id: string; hash: string; revision: number; changed: boolean }
interface SyncResult { from: string; to: string; items: { id: string; action: string; hash: string }[] }
interface WebhookRow { id: string; url: string; events: string[]; createdAt: string; secret?: string }
interface DeadLetters {
  pending: number;
  dead: number;
  deadLetters: { id: string; hookId: string; event: string; attempts: number; lastError: string | null; deadAt: string }[];
}
interface TokenRow { id: string; name: string; role: string; environments: '*' | string[]; createdAt: string; createdBy: string; revokedAt: string | null; token?: string }
interface AuditRow { id: number; at: string; actor: string; action: string; env: string | null; target: string | null; detail: unknown }

async function envCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['ls', 'create', 'rm']);
  if (action === 'ls') {
    const res = await ctx.client.request<{ environments: EnvironmentRow[] }>('GET', 'environments');
    out(ctx, res, () => formatTable(['ENV', 'CONTENT', 'KEYS', 'CREATED'],
      res.environments.map((e) => [e.id, e.contentCount, e.keyCount, e.createdAt])));
  } else if (action === 'create') {
    const env = positional(ctx, 1, 'ENV');
    const res = await ctx.client.request<{ id: string; created: boolean }>('PUT', `environments/${seg(env)}`);
    out(ctx, res, () => (res.created ? `created environment ${res.id}\n` : `environment ${res.id} already exists\n`));
  } else {
    const env = positional(ctx, 1, 'ENV');
    const force = ctx.args.flags.get('force') === 'true' ? '?force=true' : '';
    const res = await ctx.client.request<{ id: string; contentDeleted: number }>('DELETE', `environments/${seg(env)}${force}`);
    out(ctx, res, () => `deleted environment ${res.id} (${res.contentDeleted} content items)\n`);
  }
}

async function keyCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['create', 'ls', 'revoke']);
  const env = flag(ctx, 'env');
  const base = `environments/${seg(env)}/keys`;
  if (action === 'create') {
    const res = await ctx.client.request<{ id: string; key: string }>('POST', base);
    out(ctx, res, () => `key id:  ${res.id}\napi key: ${res.key}\n(the API key is shown only this once; store it now)\n`);
  } else if (action === 'ls') {
    const res = await ctx.client.request<{ keys: KeyRow[] }>('GET', base);
    out(ctx, res, () => formatTable(['KEY ID', 'CREATED', 'LAST USED', 'REVOKED'],
      res.keys.map((k) => [k.id, k.createdAt, k.lastUsedAt, k.revokedAt])));
  } else {
    const keyId = positional(ctx, 1, 'KEY_ID');
    const res = await ctx.client.request<{ id: string }>('DELETE', `${base}/${seg(keyId)}`);
    out(ctx, res, () => `revoked key ${res.id}\n`);
  }
}

function contentPath(ctx: Ctx): string {
  return `environments/${seg(flag(ctx, 'env'))}/content/${seg(flag(ctx, 'id'))}`;
}

async function contentCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['put', 'get', 'ls', 'rm', 'history', 'rollback']);
  if (action === 'ls') {
    const env = flag(ctx, 'env');
    const res = await ctx.client.request<{ content: ContentRow[] }>('GET', `environments/${seg(env)}/content`);
    out(ctx, res, () => formatTable(['ID', 'HASH', 'REVISIONS', 'MAPPING', 'UPDATED'],
      res.content.map((c) => [c.id, c.hash, c.revisionCount, c.hasMapping, c.updatedAt])));
    return;
  }
  const path = contentPath(ctx);
  if (action === 'put') {
    const file = positional(ctx, 1, 'FILE');
    const version = ctx.args.flags.get('min-app-version');
    const query = version === undefined ? '' : `?minAppVersion=${encodeURIComponent(version)}`;
    const text = await ctx.io.readInput(file);
    const res = await ctx.client.request<PutResult>('PUT', path + query, text, 'text/plain; charset=utf-8');
    out(ctx, res, () => (res.changed
      ? `${res.id}: revision ${res.revision}, hash ${res.hash}\n`
      : `${res.id}: unchanged (revision ${res.revision}, hash ${res.hash})\n`));
  } else if (action === 'get' || action === 'history') {
    const res = await ctx.client.request<ContentDetail>('GET', path);
    if (action === 'history') {
      out(ctx, res, () => formatTable(['REVISION', 'HASH', 'MIN APP VERSION', 'CREATED'],
        res.revisions.map((r) => [r.number, r.hash, r.minAppVersion, r.createdAt])));
      return;
    }
    const wanted = ctx.args.flags.get('revision');
    const revision = wanted === undefined
      ? res.revisions[res.revisions.length - 1]
      : res.revisions.find((r) => String(r.number) === wanted);
    if (revision === undefined) throw new Error(`${res.id} has no revision ${wanted}`);
    out(ctx, res, () => (revision.text.endsWith('\n') ? revision.text : revision.text + '\n'));
  } else if (action === 'rm') {
    const res = await ctx.client.request<{ id: string }>('DELETE', path);
    out(ctx, res, () => `deleted ${res.id}\n`);
  } else {
    const to = flag(ctx, 'to');
    const res = await ctx.client.request<PutResult>('POST', `${path}/rollback?to=${encodeURIComponent(to)}`);
    out(ctx, res, () => `${res.id}: revision ${to} restored as revision ${res.revision}, hash ${res.hash}\n`);
  }
}

async function mappingCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['put', 'get', 'rm']);
  const path = contentPath(ctx);
  if (action === 'put') {
    const file = positional(ctx, 1, 'FILE');
    const text = await ctx.io.readInput(file);
    const res = await ctx.client.request<{ id: string; ruleCount: number }>('PUT', `${path}/mapping`, text);
    out(ctx, res, () => `${res.id}: mapping stored (${res.ruleCount} rules)\n`);
  } else if (action === 'get') {
    const res = await ctx.client.request<ContentDetail>('GET', path);
    ctx.io.stdout(JSON.stringify(res.mapping, null, 2) + '\n');
  } else {
    const res = await ctx.client.request<{ id: string }>('DELETE', `${path}/mapping`);
    out(ctx, res, () => `${res.id}: mapping removed\n`);
  }
}

async function syncCommand(ctx: Ctx): Promise<void> {
  const from = positional(ctx, 0, 'FROM');
  const to = positional(ctx, 1, 'TO');
  const ids = ctx.args.positionals.slice(2);
  const body = JSON.stringify(ids.length === 0 ? { to } : { to, ids });
  const res = await ctx.client.request<SyncResult>('POST', `environments/${seg(from)}/sync`, body);
  out(ctx, res, () => formatTable(['ID', 'ACTION', 'HASH'], res.items.map((i) => [i.id, i.action, i.hash])));
}

async function webhookCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['add', 'ls', 'rm', 'dead-letters']);
  if (action === 'add') {
    const url = positional(ctx, 1, 'URL');
    const events = flag(ctx, 'events').split(',').map((e) => e.trim()).filter((e) => e !== '');
    const secret = ctx.args.flags.get('secret');
    const body = JSON.stringify(secret === undefined ? { url, events } : { url, events, secret });
    const res = await ctx.client.request<WebhookRow>('POST', 'webhooks', body);
    out(ctx, res, () => `webhook ${res.id} -> ${res.url} (${res.events.join(', ')})\n` +
      (secret === undefined ? `secret: ${res.secret ?? ''}\n(the secret is shown only this once)\n` : ''));
  } else if (action === 'ls') {
    const res = await ctx.client.request<{ webhooks: WebhookRow[] }>('GET', 'webhooks');
    out(ctx, res, () => formatTable(['ID', 'URL', 'EVENTS', 'CREATED'],
      res.webhooks.map((w) => [w.id, w.url, w.events.join(','), w.createdAt])));
  } else if (action === 'dead-letters') {
    const limit = ctx.args.flags.get('limit');
    const res = await ctx.client.request<DeadLetters>('GET', `webhooks/dead-letters${limit === undefined ? '' : `?limit=${encodeURIComponent(limit)}`}`);
    out(ctx, res, () => `${res.pending} pending, ${res.dead} dead-lettered\n` + formatTable(['ID', 'WEBHOOK', 'EVENT', 'ATTEMPTS', 'LAST ERROR', 'DEAD AT'],
      res.deadLetters.map((d) => [d.id, d.hookId, d.event, String(d.attempts), d.lastError ?? '', d.deadAt])));
  } else {
    const id = positional(ctx, 1, 'ID');
    const res = await ctx.client.request<{ id: string }>('DELETE', `webhooks/${seg(id)}`);
    out(ctx, res, () => `deleted webhook ${res.id}\n`);
  }
}

function scopeText(environments: '*' | string[]): string {
  return environments === '*' ? '*' : environments.join(',');
}

async function tokenCommand(ctx: Ctx): Promise<void> {
  const action = sub(ctx, ['create', 'ls', 'revoke']);
  if (action === 'create') {
    const name = positional(ctx, 1, 'NAME');
    const role = flag(ctx, 'role');
    const envFlag = ctx.args.flags.get('env');
    const environments = envFlag === undefined ? '*' : envFlag.split(',').map((e) => e.trim()).filter((e) => e !== '');
    const res = await ctx.client.request<TokenRow>('POST', 'tokens', JSON.stringify({ name, role, environments }));
    out(ctx, res, () => `token ${res.name} (${res.role}, environments ${scopeText(res.environments)})\n` +
      `${res.token ?? ''}\n(the token is shown only this once)\n`);
  } else if (action === 'ls') {
    const res = await ctx.client.request<{ tokens: TokenRow[] }>('GET', 'tokens');
    out(ctx, res, () => formatTable(['NAME', 'ROLE', 'ENVIRONMENTS', 'CREATED', 'BY', 'REVOKED'],
      res.tokens.map((t) => [t.name, t.role, scopeText(t.environments), t.createdAt, t.createdBy, t.revokedAt])));
  } else {
    const name = positional(ctx, 1, 'NAME');
    const res = await ctx.client.request<{ name: string }>('DELETE', `tokens/${seg(name)}`);
    out(ctx, res, () => `revoked token ${res.name}\n`);
  }
}

async function auditCommand(ctx: Ctx): Promise<void> {
  const query = new URLSearchParams();
  const limit = ctx.args.flags.get('limit');
  const before = ctx.args.flags.get('before');
  if (limit !== undefined) query.set('limit', limit);
  if (before !== undefined) query.set('before', before);
  const qs = query.size === 0 ? '' : `?${query.toString()}`;
  const res = await ctx.client.request<{ entries: AuditRow[] }>('GET', `audit${qs}`);
  out(ctx, res, () => formatTable(['ID', 'AT', 'WHO', 'ACTION', 'ENV', 'TARGET', 'DETAIL'],
    res.entries.map((e) => [e.id, e.at, e.actor, e.action, e.env, e.target, e.detail])));
}

async function importCommand(ctx: Ctx): Promise<void> {
  const file = positional(ctx, 0, 'FILE');
  const bundle = await ctx.io.readInput(file);
  const res = await ctx.client.request<Record<string, number>>('POST', 'import', bundle);
  out(ctx, res, () => formatTable(['ENVIRONMENTS CREATED', 'KEYS ADDED', 'REVISIONS ADDED', 'MAPPINGS CHANGED', 'SCHEDULES ADDED', 'ROLLOUTS ADDED'],
    [[res.environmentsCreated, res.keysAdded, res.revisionsAdded, res.mappingsChanged, res.schedulesAdded, res.rolloutsAdded]]));
}

async function exportCommand(ctx: Ctx): Promise<void> {
  const bundle = await ctx.client.request('GET', 'export');
  const env = ctx.args.flags.get('client-defaults');
  let out = bundle;
  if (env !== undefined) {
    // Loaded here, not at the top: it brings the bundle checks and the mapping compiler (zod among
    // them), which every other management command would otherwise load at each start.
    const { clientDefaults } = await import('../../store/bundle/client-defaults.js');
    out = clientDefaults(bundle, env, ctx.args.flags.get('app-version') ?? null, new Date());
  }
  const text = JSON.stringify(out, null, 2) + '\n';
  const file = ctx.args.flags.get('out');
  if (file === undefined) {
    ctx.io.stdout(text);
  } else {
    await writeFile(file, text);
    if (!ctx.json) ctx.io.stderr(`wrote ${file} (API keys are never exported)\n`);
  }
}

const COMMANDS = {
  env: envCommand,
  key: keyCommand,
  content: contentCommand,
  mapping: mappingCommand,
  sync: syncCommand,
  webhook: webhookCommand,
  token: tokenCommand,
  audit: auditCommand,
  import: importCommand,
  export: exportCommand,
  ...SCHEDULE_COMMANDS,
  ...EXPERIMENT_COMMANDS,
} satisfies Record<string, (ctx: Ctx) => Promise<void>>;

/**
 * `rcd schedule`, `rcd rollout`, `rcd kill` and `rcd preview` driven as subprocesses against the real
 * server process: each command's effect checked through the delivery API and the admin API, times
 * checked before anything is sent, the server's refusals passed on with exit code 1.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, call, startServer, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
let srv: ServerProcess;
let key: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function rcd(args: string[], input?: string): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, RCD_ADMIN_TOKEN: 'test-admin-token' };
  delete env.RCD_ADMIN_URL;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args, '--admin-url', srv.adminUrl!], { env, cwd: srv.dir }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
    if (input !== undefined) child.stdin!.end(input);
  });
}

async function json<T>(args: string[], input?: string): Promise<T> {
  const r = await rcd([...args, '--json'], input);
  if (r.code !== 0) throw new Error(`rcd ${args.join(' ')}: exit ${r.code}\n${r.stderr}`);
  return JSON.parse(r.stdout) as T;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

async function served(id: string): Promise<unknown> {
  return (await call(srv.url, `/api/v1/config/${id}`, { key })).json;
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await fetch(`${srv.adminUrl}/admin/v1/environments/live`, { method: 'PUT', headers: AUTH });
  key = ((await (await fetch(`${srv.adminUrl}/admin/v1/environments/live/keys`, { method: 'POST', headers: AUTH })).json()) as { key: string }).key;
  // Shop at revision 2 (a mapping's base below), and Event, which the first test's change edits.
  await fetch(`${srv.adminUrl}/admin/v1/environments/live/content/Shop`, { method: 'PUT', headers: AUTH, body: '{"theme":"default"}' });
  await fetch(`${srv.adminUrl}/admin/v1/environments/live/content/Shop`, { method: 'PUT', headers: AUTH, body: '{"theme":"summer"}' });
  await fetch(`${srv.adminUrl}/admin/v1/environments/live/content/Event`, { method: 'PUT', headers: AUTH, body: '{"theme":"default"}' });
});

afterAll(async () => {
  await srv?.dispose();
});

// Concurrent: the tests share the server and its environment but each edits items of its own, and
// two of them wait seconds on the wall clock for a change's or a step's time, which the others'
// commands then overlap.
describe.concurrent('rcd schedule', () => {
  it('puts a file at a time; ls shows it pending, then applied; the item changes at that time', async () => {
    const file = join(srv.dir, 'event.jsonc');
    writeFileSync(file, '{ // Halloween\n "theme": "halloween" }');
    // Far enough ahead for two CLI runs before it is due on a loaded machine, where each took up to
    // ~2.5 s, beside the other tests' commands.
    const made = await json<{ id: string; status: string; at: string }>(['schedule', 'put', file, '--env', 'live', '--id', 'Event', '--at', isoIn(10_000), '--note', 'Halloween on']);
    expect(made.status).toBe('pending');
    const table = await rcd(['schedule', 'ls', '--env', 'live', '--status', 'pending']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(made.id);
    expect(table.stdout).toContain('Halloween on');
    expect(await served('Event')).toEqual({ theme: 'default' });
    await until('the scheduled theme served', async () => ((await served('Event')) as { theme: string }).theme === 'halloween', 18_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(made.at));
    const all = await json<{ schedules: { id: string; status: string }[] }>(['schedule', 'ls']);
    expect(all.schedules.find((s) => s.id === made.id)?.status).toBe('applied');
  }, 30_000);

  it('moves and cancels; a multi-op change from a file; mapping and rollback ops', async () => {
    const later = await json<{ id: string }>(['schedule', 'rollback', '--env', 'live', '--id', 'Shop', '--to', '1', '--at', isoIn(3_600_000)]);
    // Given with an offset of +01:00, answered in UTC.
    const target = new Date(Math.ceil((Date.now() + 7_200_000) / 1000) * 1000);
    const local = new Date(target.getTime() + 3_600_000).toISOString().replace(/\.000Z$/, '+01:00');
    const moved = await json<{ at: string }>(['schedule', 'mv', later.id, '--env', 'live', '--at', local]);
    expect(moved.at).toBe(target.toISOString());
    const cancelled = await rcd(['schedule', 'cancel', later.id, '--env', 'live']);
    expect(cancelled).toMatchObject({ code: 0, stdout: `cancelled ${later.id}\n` });
    const mapping = join(srv.dir, 'mapping.json');
    writeFileSync(mapping, JSON.stringify({ rules: [{ segment: 'vip', when: { vip: true }, patch: { theme: 'gold' } }] }));
    const m = await json<{ ops: { op: string }[] }>(['schedule', 'mapping', mapping, '--env', 'live', '--id', 'Shop', '--at', isoIn(3_600_000), '--base', '2']);
    expect(m.ops).toEqual([expect.objectContaining({ op: 'mapping.put', baseRevision: 2 })]);
    const set = join(srv.dir, 'set.json');
    writeFileSync(set, JSON.stringify({ at: isoIn(3_600_000), ops: [{ op: 'content.put', id: 'News', json: { a: 1 } }, { op: 'content.delete', id: 'Shop' }] }));
    const both = await json<{ items: string[] }>(['schedule', 'create', set, '--env', 'live']);
    expect(both.items).toEqual(['News', 'Shop']);
    const got = await json<{ ops: { op: string; text?: string }[] }>(['schedule', 'get', (await json<{ schedules: { id: string }[] }>(['schedule', 'ls', '--env', 'live', '--id', 'News'])).schedules[0]!.id, '--env', 'live']);
    expect(got.ops[0]).toMatchObject({ op: 'content.put', text: '{\n  "a": 1\n}' });
  });

  it('refuses a time without an offset before sending anything (exit 2), and passes the server\'s refusals on (exit 1)', async () => {
    const [local, past, missing] = await Promise.all([
      rcd(['schedule', 'rm', '--env', 'live', '--id', 'Shop', '--at', '2030-01-01T00:00:00']),
      rcd(['schedule', 'rm', '--env', 'live', '--id', 'Shop', '--at', '2020-01-01T00:00:00Z']),
      rcd(['schedule', 'mapping-rm', '--env', 'live', '--id', 'Nope', '--at', isoIn(60_000)]),
    ]);
    expect(local.code).toBe(2);
    expect(local.stderr).toContain('RFC 3339');
    expect(past.code).toBe(1);
    expect(past.stderr).toContain('invalid_body, HTTP 400');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('content_not_found, HTTP 404');
  });
});

/** Item `id` of `live` ({"curve":"old"}) whose mapping's one rule, `segment`, is switched off: what a rollout turns on. */
async function itemWithRuleOff(id: string, segment: string): Promise<void> {
  await fetch(`${srv.adminUrl}/admin/v1/environments/live/content/${id}`, { method: 'PUT', headers: AUTH, body: '{"curve":"old"}' });
  await fetch(`${srv.adminUrl}/admin/v1/environments/live/content/${id}/mapping`, {
    method: 'PUT',
    headers: AUTH,
    body: JSON.stringify({ rules: [{ segment, disabled: true, patch: { curve: 'new' } }] }),
  });
}

describe.concurrent('rcd rollout, rcd kill, rcd preview', () => {
  it('creates a rollout, previews the item at a time, advances it, and kills the rule', async () => {
    await itemWithRuleOff('Game', 'new-curve');
    const t1 = isoIn(3_600_000);
    const t2 = isoIn(7_200_000);
    const created = await json<{ id: string; steps: { mod: number[] }[] }>(['rollout', 'create', '--env', 'live', '--id', 'Game', '--rule', '0', '--steps', `50@${t1},100@${t2}`]);
    expect(created.steps.map((s) => s.mod)).toEqual([[0, 499], [0, 999]]);
    // The listing, two previews (which change nothing) and a usage error, at the same time.
    const [listed, later, now, usage] = await Promise.all([
      rcd(['rollout', 'ls', '--env', 'live']),
      json<{ answer: { data: unknown } }>(['preview', '--env', 'live', '--id', 'Game', '--at', isoIn(8_000_000), '--context', '{"u":"p1"}']),
      json<{ answer: { data: unknown } }>(['preview', '--env', 'live', '--id', 'Game', '--context', '{"u":"p1"}']),
      rcd(['kill', '--env', 'live', '--id', 'Game', '--segment', 'x']),
    ]);
    expect(listed.stdout).toContain(created.id);
    // Previewed after the last step, everyone has it; now, nobody does.
    expect(later.answer.data).toEqual({ curve: 'new' });
    expect(now.answer.data).toEqual({ curve: 'old' });
    expect(usage.code).toBe(2);
    const advanced = await json<{ steps: { status: string }[] }>(['rollout', 'advance', created.id, '--env', 'live']);
    expect(advanced.steps.map((s) => s.status)).toEqual(['applied', 'pending']);
    const killed = await json<{ rule: number; cancelled: string[] }>(['kill', '--env', 'live', '--id', 'Game', '--rule', '0', '--segment', 'new-curve']);
    expect(killed.rule).toBe(0);
    expect(killed.cancelled).toHaveLength(1);
    expect((await json<{ status: string }>(['rollout', 'get', created.id, '--env', 'live'])).status).toBe('cancelled');
    for (let i = 0; i < 20; i++) {
      const r = (await call(srv.url, '/api/v1/config/Game/dynamic', { key, body: JSON.stringify({ u: `player-${i}` }) })).json as { data: unknown; meta: { seg: unknown[] } };
      expect(r.data).toEqual({ curve: 'old' });
      expect(r.meta.seg).toEqual([]);
    }
  });
  it('resumes a rollout paused past a step\'s time as --overdue says: refuse exits 1 naming the code, reschedule moves the steps left', async () => {
    await itemWithRuleOff('Late', 'late-curve');
    // Made and paused through the API at once, so the first step's time passes while it is paused.
    const made = (await (
      await fetch(`${srv.adminUrl}/admin/v1/environments/live/rollouts`, {
        method: 'POST',
        headers: AUTH,
        body: JSON.stringify({ id: 'Late', rule: 0, steps: [{ percent: 10, at: isoIn(2_500) }, { percent: 50, at: isoIn(3_600_000) }] }),
      })
    ).json()) as { id: string };
    const paused = (await (await fetch(`${srv.adminUrl}/admin/v1/environments/live/rollouts/${made.id}/pause`, { method: 'POST', headers: AUTH })).json()) as {
      status: string;
      steps: { dueAt: string }[];
    };
    expect(paused.status).toBe('paused');
    const [badChoice, atAlone, atWithSkip] = await Promise.all([
      rcd(['rollout', 'resume', made.id, '--env', 'live', '--overdue', 'later']),
      rcd(['rollout', 'resume', made.id, '--env', 'live', '--at', isoIn(600_000)]),
      rcd(['rollout', 'resume', made.id, '--env', 'live', '--overdue', 'skip', '--at', isoIn(600_000)]),
    ]);
    for (const usage of [badChoice, atAlone, atWithSkip]) expect(usage.code).toBe(2);
    await until('the first step\'s time to pass', () => Date.now() > Date.parse(paused.steps[0]!.dueAt) + 300, 10_000);
    const refused = await rcd(['rollout', 'resume', made.id, '--env', 'live', '--overdue', 'refuse']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('rollout_step_overdue, HTTP 409');
    expect((await json<{ status: string }>(['rollout', 'get', made.id, '--env', 'live'])).status).toBe('paused');
    const at = new Date(Date.now() + 600_000).toISOString();
    const moved = await json<{ status: string; steps: { status: string; dueAt: string }[] }>(['rollout', 'resume', made.id, '--env', 'live', '--overdue', 'reschedule', '--at', at]);
    expect(moved.status).toBe('active');
    expect(moved.steps.map((s) => s.status)).toEqual(['pending', 'pending']);
    expect(moved.steps[0]!.dueAt).toBe(at);
    expect(Date.parse(moved.steps[1]!.dueAt) - Date.parse(at)).toBe(Date.parse(paused.steps[1]!.dueAt) - Date.parse(paused.steps[0]!.dueAt));
  });
});

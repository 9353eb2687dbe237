/**
 * What a rollout reports and how a resume treats a step whose time passed while it was paused, on
 * one real `rcd serve` (docs/schedule.md, "Staged rollouts and stickiness"): a resume asked to
 * refuse answers 409 rollout_step_overdue naming the step and changes nothing; skip cancels it and
 * keeps the next step's time; reschedule moves the steps left keeping their spacing; a plain resume
 * still applies it at once. A rollout whose last step applied reads `completed`, and once the kill
 * switch turns its rule off, `completed` with `killed: true` and `current` saying the rule is off
 * (not `cancelled` with every step applied); one killed midway reads `cancelled`, `killed: true`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
let srv: ServerProcess;

beforeAll(async () => {
  srv = await startServer({ admin: true });
});
afterAll(async () => {
  await srv?.dispose();
});

let names = 0;

interface Step {
  percent: number;
  scheduleId: string;
  status: string;
  dueAt: string;
}
interface RolloutAnswer {
  id: string;
  status: string;
  killed: boolean;
  current: { disabled: boolean; mod: [number, number] | null; percent: number } | null;
  steps: Step[];
  error?: { code: string; message: string; details: { steps: { step: number; at: string }[] } };
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

async function adm(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; json: RolloutAnswer }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as RolloutAnswer };
}

async function ok(srv: ServerProcess, method: string, path: string, body?: unknown): Promise<RolloutAnswer> {
  const r = await adm(srv, method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

/**
 * An environment of its own on the file's server, with item Game whose mapping has rule 0 switched
 * off, and a rollout of it: each step `inMs` after the rollout is created.
 */
async function rolloutOf(plan: { percent: number; inMs: number }[]): Promise<{ srv: ServerProcess; env: string; id: string; path: string }> {
  const env = `live${++names}`;
  await ok(srv, 'PUT', `environments/${env}`);
  await ok(srv, 'PUT', `environments/${env}/content/Game`, '{"difficulty":"normal"}');
  await ok(srv, 'PUT', `environments/${env}/content/Game/mapping`, { rules: [{ segment: 'new-curve', disabled: true, patch: { difficulty: 'adaptive' } }] });
  const made = await ok(srv, 'POST', `environments/${env}/rollouts`, { id: 'Game', rule: 0, steps: plan.map((p) => ({ percent: p.percent, at: isoIn(p.inMs) })) });
  expect(made.current).toEqual({ disabled: true, mod: null, percent: 0 });
  expect(made.killed).toBe(false);
  return { srv, env, id: made.id, path: `environments/${env}/rollouts/${made.id}` };
}

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Pauses the rollout and waits until its first step's time has passed. */
async function pausedPastFirstStep(srv: ServerProcess, path: string): Promise<RolloutAnswer> {
  const paused = await ok(srv, 'POST', `${path}/pause`);
  expect(paused.status).toBe('paused');
  const due = Date.parse(paused.steps[0]!.dueAt);
  await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now()) + 300));
  return paused;
}

// Concurrent: each test works in an environment of its own on the shared server, and three of them
// wait on the wall clock for a step's time to pass, which the others' work then overlaps.
describe.concurrent('resuming past a step\'s time', () => {
  it('refuses when asked to, names the step, and changes nothing; skip then goes on with the next step at its time', async () => {
    const { srv, path } = await rolloutOf([
      { percent: 10, inMs: 1500 },
      { percent: 50, inMs: 3_600_000 },
    ]);
    const paused = await pausedPastFirstStep(srv, path);
    const refused = await adm(srv, 'POST', `${path}/resume`, { overdue: 'refuse' });
    expect(refused.status).toBe(409);
    expect(refused.json.error?.code).toBe('rollout_step_overdue');
    expect(refused.json.error?.details.steps).toEqual([{ step: 0, scheduleId: paused.steps[0]!.scheduleId, at: paused.steps[0]!.dueAt }]);
    expect((await ok(srv, 'GET', path)).status).toBe('paused');

    const bad = await adm(srv, 'POST', `${path}/resume`, { overdue: 'later' });
    expect(bad.status).toBe(400);
    expect(bad.json.error?.code).toBe('invalid_body');

    const skipped = await ok(srv, 'POST', `${path}/resume`, { overdue: 'skip' });
    expect(skipped.status).toBe('active');
    expect(skipped.steps.map((s) => s.status)).toEqual(['cancelled', 'pending']);
    expect(skipped.steps[1]!.dueAt).toBe(paused.steps[1]!.dueAt);
    expect(skipped.current).toEqual({ disabled: true, mod: null, percent: 0 });
  }, 30_000);

  it('reschedule moves the steps left by as much, keeping their spacing', async () => {
    const { srv, path } = await rolloutOf([
      { percent: 10, inMs: 1500 },
      { percent: 50, inMs: 3_600_000 },
    ]);
    const paused = await pausedPastFirstStep(srv, path);
    const at = new Date(Date.now() + 600_000).toISOString();
    const moved = await ok(srv, 'POST', `${path}/resume`, { overdue: 'reschedule', at });
    expect(moved.status).toBe('active');
    expect(moved.steps.map((s) => s.status)).toEqual(['pending', 'pending']);
    expect(moved.steps[0]!.dueAt).toBe(at);
    const spacing = Date.parse(paused.steps[1]!.dueAt) - Date.parse(paused.steps[0]!.dueAt);
    expect(Date.parse(moved.steps[1]!.dueAt) - Date.parse(moved.steps[0]!.dueAt)).toBe(spacing);
    const past = await adm(srv, 'POST', `${path}/pause`);
    expect(past.status).toBe(200);
    const refused = await adm(srv, 'POST', `${path}/resume`, { overdue: 'reschedule', at: isoIn(-60_000) });
    expect(refused.status).toBe(400);
    expect(refused.json.error?.code).toBe('invalid_body');
  }, 30_000);

  it('a plain resume applies it at once, as before; finished then killed reads completed, killed, rule off', async () => {
    const { srv, env, path } = await rolloutOf([{ percent: 100, inMs: 1500 }]);
    await pausedPastFirstStep(srv, path);
    expect((await ok(srv, 'POST', `${path}/resume`)).status).toBe('active');
    await until(async () => (await ok(srv, 'GET', path)).status === 'completed');
    const done = await ok(srv, 'GET', path);
    expect(done.killed).toBe(false);
    expect(done.current).toEqual({ disabled: false, mod: [0, 999], percent: 100 });
    await ok(srv, 'POST', `environments/${env}/content/Game/kill`, { rule: 0 });
    const killed = await ok(srv, 'GET', path);
    expect(killed.status).toBe('completed');
    expect(killed.killed).toBe(true);
    expect(killed.steps.map((s) => s.status)).toEqual(['applied']);
    expect(killed.current).toEqual({ disabled: true, mod: [0, 999], percent: 0 });
    const list = await ok(srv, 'GET', `environments/${env}/rollouts?id=Game`);
    expect((list as unknown as { rollouts: RolloutAnswer[] }).rollouts[0]).toMatchObject({ status: 'completed', killed: true });
  }, 30_000);

  it('killed midway reads cancelled and killed, its rule off', async () => {
    const { srv, env, path } = await rolloutOf([
      { percent: 10, inMs: 3_600_000 },
      { percent: 50, inMs: 7_200_000 },
    ]);
    await ok(srv, 'POST', `${path}/advance`);
    expect((await ok(srv, 'GET', path)).current).toEqual({ disabled: false, mod: [0, 99], percent: 10 });
    await ok(srv, 'POST', `environments/${env}/content/Game/kill`, { rule: 0 });
    const killed = await ok(srv, 'GET', path);
    expect(killed).toMatchObject({ status: 'cancelled', killed: true, current: { disabled: true, percent: 0 } });
    expect(killed.steps.map((s) => s.status)).toEqual(['applied', 'cancelled']);
    const again = await adm(srv, 'POST', `${path}/resume`);
    expect(again.status).toBe(409);
    expect(again.json.error?.code).toBe('conflict');
  }, 30_000);
});

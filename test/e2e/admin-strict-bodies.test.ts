/**
 * Admin bodies are read strictly: a member a route does not know is refused (400 invalid_body,
 * details.field naming it), never ignored, on every admin route that takes a body (walked from the
 * router's own table, so a new route must say here what it takes) and on every write route that
 * takes none. The two cases where ignoring changed what the call did: a kill given `{"Rule":2}`
 * disabled every rule and cancelled every schedule of the item; a PATCH of a scheduled change
 * given `ops` moved it and kept its ops. Also the schedule listings' `status=` (empty) and times
 * whose year is 0000-0099.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_ROUTES } from '../../src/admin/server/handlers.js';
import { field, parseAnswer, type Answer } from '../helpers/answers.js';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const AUTH = { authorization: 'Bearer test-admin-token' };
const FUTURE = new Date(Date.now() + 3_600_000).toISOString();
const MAPPING = { rules: [{ segment: 'vip', when: { vip: true }, patch: { color: 'gold' } }, { segment: 'all', patch: { size: 2 } }] };

let srv: ServerProcess;

async function admin(method: string, path: string, body?: unknown): Promise<{ status: number; json: Answer }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, { method, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: parseAnswer(await res.text()) };
}

async function ok(method: string, path: string, body?: unknown): Promise<Answer> {
  const r = await admin(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

function refusedField(r: { status: number; json: Answer }): unknown {
  return r.status === 400 && r.json.error?.code === 'invalid_body' ? (r.json.error.details as { field?: unknown } | undefined)?.field : `${r.status} ${JSON.stringify(r.json)}`;
}

beforeAll(async () => {
  srv = await startServer({ admin: true });
  await ok('PUT', 'environments/live');
  await ok('PUT', 'environments/live/content/Game', { color: 'green', size: 1 });
  await ok('PUT', 'environments/live/content/Game/mapping', MAPPING);
}, 30_000);
afterAll(async () => srv.dispose());

/**
 * What each write route (and the preview, a read with a body) takes: a valid body, or null for a
 * route that takes none. The content's body is the content itself and a mapping's, a bundle's are
 * checked by their own strict formats (invalid_mapping, invalid_bundle): `own`.
 */
const BODIES: Record<string, Record<string, unknown> | null | 'own'> = {
  'PUT environments/:env': null,
  'DELETE environments/:env': null,
  'POST environments/:env/keys': { key: 'chosen-key-1234' },
  'DELETE environments/:env/keys/:keyId': null,
  'PUT environments/:env/content/:id': 'own',
  'DELETE environments/:env/content/:id': null,
  'POST environments/:env/content/:id/rollback': null,
  'PUT environments/:env/content/:id/mapping': 'own',
  'DELETE environments/:env/content/:id/mapping': null,
  'POST environments/:env/content/:id/preview': { u: 'a', p: { vip: true } },
  'POST environments/:env/sync': { to: 'other', dryRun: true },
  'POST import': 'own',
  'POST webhooks': { url: 'https://example.com/hook', events: ['content.updated'] },
  'DELETE webhooks/:id': null,
  'POST tokens': { name: 'strict', role: 'read', environments: '*' },
  'DELETE tokens/:name': null,
  'POST environments/:env/schedules': { at: FUTURE, ops: [{ op: 'content.put', id: 'Game', json: { color: 'blue' } }] },
  'PATCH environments/:env/schedules/:sid': { at: FUTURE },
  'DELETE environments/:env/schedules/:sid': null,
  'PUT environments/:env/schedules/:sid/ops': { ops: [{ op: 'content.put', id: 'Game', json: { color: 'blue' } }] },
  'POST environments/:env/schedules/check': { ops: [{ op: 'content.put', id: 'Game', json: { color: 'blue' } }] },
  'POST environments/:env/rollouts': { id: 'Game', rule: 1, steps: [{ percent: 50, at: FUTURE }] },
  'POST environments/:env/rollouts/:rid/pause': null,
  'POST environments/:env/rollouts/:rid/resume': { overdue: 'apply' },
  'POST environments/:env/rollouts/:rid/advance': null,
  'POST environments/:env/rollouts/:rid/rollback': null,
  'POST environments/:env/content/:id/kill': { rule: 1, segment: 'all' },
};

describe('every admin body refuses a member it does not know', () => {
  const routes = ADMIN_ROUTES.filter((r) => r.method !== 'GET');

  it('the table names every admin route that is not a GET', () => {
    expect(routes.map((r) => `${r.method} ${r.pattern}`).sort()).toEqual(Object.keys(BODIES).sort());
  });

  for (const route of routes) {
    const key = `${route.method} ${route.pattern}`;
    const valid = BODIES[key];
    if (valid === 'own') continue;
    // Params name nothing that exists (or, for :env, an environment nobody made): the body is refused before they are read.
    const path = route.pattern.replace(':env', 'nowhere').replace(/:[a-zA-Z]+/g, 'nothing-here');
    it(`${key}: an unknown member is refused, before anything is read or written`, async () => {
      expect(refusedField(await admin(route.method, path, { ...valid, Bogus: 1 }))).toBe('Bogus');
    });
  }

  it('a route that takes no body still accepts none, and an empty object', async () => {
    await ok('PUT', 'environments/spare');
    expect((await admin('PUT', 'environments/spare', {})).status).toBe(200);
    expect((await admin('DELETE', 'environments/spare', {})).status).toBe(200);
  });

  it('a rollout step and a scheduled change\'s op refuse unknown members too', async () => {
    const step = await admin('POST', 'environments/live/rollouts', { id: 'Game', rule: 1, steps: [{ percent: 50, at: FUTURE, precent: 5 }] });
    expect(refusedField(step)).toBe('steps[0].precent');
    const op = await admin('POST', 'environments/live/schedules', { at: FUTURE, ops: [{ op: 'content.put', id: 'Game', json: {}, Id: 'Other' }] });
    expect(op.status).toBe(400);
    expect(op.json.error?.code).toBe('invalid_body');
  });

  it('the mapping and the bundle formats refuse unknown members with their own codes', async () => {
    const mapping = await admin('PUT', 'environments/live/content/Game/mapping', { ...MAPPING, Rules: [] });
    expect(mapping.json.error?.code).toBe('invalid_mapping');
    const bundle = await admin('POST', 'import', { environments: {}, Schedules: [] });
    expect(bundle.json.error?.code).toBe('invalid_bundle');
  });
});

describe('the two calls where an ignored member changed what they did', () => {
  it('kill {"Rule":2} is refused: no rule is disabled and no scheduled change of the item is cancelled', async () => {
    const pending = await ok('POST', 'environments/live/schedules', { at: FUTURE, ops: [{ op: 'content.put', id: 'Game', json: { color: 'red', size: 1 } }] });
    const before = await ok('GET', 'environments/live/content/Game');
    expect(refusedField(await admin('POST', 'environments/live/content/Game/kill', { Rule: 1 }))).toBe('Rule');
    expect((await ok('GET', 'environments/live/content/Game')).mapping).toEqual(before.mapping);
    const still = await ok('GET', `environments/live/schedules/${field(pending.id, 'id')}`);
    expect((still as { status?: string }).status).toBe('pending');
  });

  it('PATCH of a scheduled change with ops is refused: neither its time nor its ops change', async () => {
    const created = await ok('POST', 'environments/live/schedules', { at: FUTURE, ops: [{ op: 'content.put', id: 'Game', json: { color: 'teal', size: 1 } }] });
    const id = field(created.id, 'id');
    const later = new Date(Date.parse(FUTURE) + 60_000).toISOString();
    const r = await admin('PATCH', `environments/live/schedules/${id}`, { at: later, ops: [{ op: 'content.delete', id: 'Game' }] });
    expect(refusedField(r)).toBe('ops');
    const after = (await ok('GET', `environments/live/schedules/${id}`)) as { at?: string; ops?: { op: string }[] };
    expect(after.at).toBe(new Date(Date.parse(FUTURE)).toISOString());
    expect(after.ops?.map((o) => o.op)).toEqual(['content.put']);
  });
});

describe('schedule listings and times', () => {
  it('status= (empty) is refused, on the environment\'s listing and across environments', async () => {
    for (const path of ['environments/live/schedules?status=', 'schedules?status=', 'schedules?status=,']) {
      const r = await admin('GET', path);
      expect({ path, status: r.status, code: r.json.error?.code }).toEqual({ path, status: 400, code: 'invalid_query' });
    }
  });

  it('a time in year 0000-0099 is that year, not 1900-1999', async () => {
    // A bundle's scheduled change whose time has passed is kept with its time and applies at once, late.
    const bundle = {
      environments: { years: { content: { Old: { json: { v: 0 } } } } },
      schedules: [
        { env: 'years', at: '0050-03-01T12:00:00Z', ops: [{ op: 'content.put', id: 'Old', json: { v: 50 } }], note: 'fifty' },
        { env: 'years', at: '0000-01-01T00:00:00+01:00', ops: [{ op: 'content.put', id: 'Old', json: { v: 0 } }], note: 'zero' },
      ],
    };
    await ok('POST', 'import', bundle);
    const list = (await ok('GET', 'environments/years/schedules')) as { schedules?: { note: string; at: string }[] };
    expect(Object.fromEntries((list.schedules ?? []).map((s) => [s.note, s.at]))).toEqual({ fifty: '0050-03-01T12:00:00.000Z', zero: '-000001-12-31T23:00:00.000Z' });
    // Neither is in the 1900s, where the two-digit reading put them; a bound in year 0010 falls between them.
    const since1900 = (await ok('GET', 'environments/years/schedules?from=1900-01-01T00:00:00Z')) as { schedules?: unknown[] };
    expect(since1900.schedules).toEqual([]);
    const until10 = (await ok('GET', 'environments/years/schedules?to=0010-01-01T00:00:00Z')) as { schedules?: { note: string }[] };
    expect(until10.schedules?.map((s) => s.note)).toEqual(['zero']);
  });
});

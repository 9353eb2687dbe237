/**
 * The readout of experiments on the real server process without --exposures (docs/admin.md,
 * "Experiments"): the experiments come from the current mappings (an edit shows at once), with
 * `recording: false` and no players; one experiment by name, 404 experiment_not_found; the `rcd
 * experiments` command as a subprocess. The readout with exposures recorded is covered in-process
 * on a real exposure file (test/unit/admin/server/experiments.test.ts).
 */
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExperimentDetail, ExperimentReadout } from '../../src/exposures/readout.js';
import type { ErrorBody } from '../helpers/answers.js';
import { BIN, startServer, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const SPLIT = { segment: 'ab', variants: [{ name: 'A', mod: [0, 499], patch: { a: 1 } }, { name: 'B', mod: [500, 999], patch: { a: 2 } }] };

let srv: ServerProcess;

type Body = Partial<ExperimentDetail> & { recording?: boolean; experiments?: ExperimentReadout[]; error?: ErrorBody };

async function adm(method: string, path: string, body?: unknown): Promise<{ status: number; body: Body }> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/${path}`, {
    method,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Body };
}

function rcd(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, RCD_ADMIN_TOKEN: TOKEN };
  delete env.RCD_ADMIN_URL;
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args, '--admin-url', srv.adminUrl!], { env }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : -1;
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  srv = await startServer({
    admin: true,
    bundle: {
      environments: {
        live: {
          content: {
            Shop: { json: { a: 0 }, mapping: { rules: [SPLIT, { ...SPLIT, segment: 'other', when: { vip: true } }] } },
            Plain: { json: { a: 0 } },
          },
        },
      },
    },
  });
});

afterAll(async () => {
  await srv?.dispose();
});

describe('experiments readout (server process, not recording)', () => {
  it('lists the experiments of the current mappings with recording false, and follows a mapping edit at once', async () => {
    const r = await adm('GET', 'environments/live/experiments');
    expect(r.status).toBe(200);
    expect(r.body.recording).toBe(false);
    expect(r.body.experiments).toEqual([
      {
        name: 'Shop:ab', item: 'Shop', items: ['Shop'], segment: 'ab', disabled: false,
        variants: [{ name: 'A', share: 0.5, players: 0, days: [] }, { name: 'B', share: 0.5, players: 0, days: [] }],
        players: 0, moved: 0, srm: null, firstExposure: null, lastExposure: null,
      },
      expect.objectContaining({ name: 'Shop:other', segment: 'other' }),
    ]);
    const edit = await adm('PUT', 'environments/live/content/Shop/mapping', {
      rules: [{ segment: 'ab', disabled: true, variants: [{ name: 'A', mod: [0, 99], patch: { a: 1 } }, { name: 'C', mod: [100, 999], patch: { a: 3 } }] }],
    });
    expect(edit.status).toBe(200);
    const after = await adm('GET', 'environments/live/experiments');
    expect(after.body.experiments!.map((e) => [e.name, e.disabled, e.variants.map((v) => [v.name, v.share])])).toEqual([
      ['Shop:ab', true, [['A', 0.1], ['C', 0.9]]],
    ]);
  });

  it('answers one experiment by name, and 404 experiment_not_found for another', async () => {
    const one = await adm('GET', 'environments/live/experiments/Shop:ab');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ name: 'Shop:ab', players: 0, hours: [] });
    // Its rule was removed by the edit.
    const gone = await adm('GET', 'environments/live/experiments/Shop:other');
    expect([gone.status, gone.body.error?.code]).toEqual([404, 'experiment_not_found']);
    const env = await adm('GET', 'environments/nope/experiments/x');
    expect([env.status, env.body.error?.code]).toEqual([404, 'not_found']);
  });

  it('rcd experiments prints the table and says the server is not recording; rcd --help lists it', async () => {
    const table = await rcd(['experiments', 'live']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^not recording: the server runs without --exposures \(players are 0\)\nNAME\s+ITEM/);
    expect(table.stdout).toMatch(/\nShop:ab\s+Shop\s+ab\s+yes\s+0\s+0\s+A 10% 0, C 90% 0\s+-\s+-\n$/);
    const missing = await rcd(['experiments', 'live', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('(experiment_not_found, HTTP 404)');
    const help = await rcd(['--help']);
    expect(help.stdout).toContain('rcd experiments ENV [NAME]');
  });
});

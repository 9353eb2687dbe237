/**
 * The change log's retention against the real `rcd serve` process and its SQLite file: it keeps the
 * newest --change-log-entries entries, pruned in steps of 1% of that (docs/admin.md), so the log
 * never holds more than 1% over the bound and most writes pay no pruning.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/server-process.js';

const TOKEN = 'test-admin-token';
const KEEP = 1000;
const STEP = KEEP / 100;
let srv: ServerProcess;

async function put(id: string, n: number): Promise<void> {
  const res = await fetch(`${srv.adminUrl}/admin/v1/environments/e/content/${id}`, { method: 'PUT', headers: { authorization: `Bearer ${TOKEN}` }, body: `{"n":${n}}` });
  expect(res.status).toBe(200);
}

function logEntries(): { n: number; newest: number } {
  const db = new Database(srv.storeUrl.slice('sqlite:'.length), { readonly: true });
  try {
    return db.prepare('SELECT count(*) AS n, max(seq) AS newest FROM change_log').get() as { n: number; newest: number };
  } finally {
    db.close();
  }
}

beforeAll(async () => {
  srv = await startServer({ admin: true, args: ['--change-log-entries', String(KEEP)] });
});

afterAll(async () => {
  await srv?.dispose();
});

describe('change-log retention', () => {
  it('keeps the newest --change-log-entries entries, pruned in steps of 1%', async () => {
    const content: Record<string, { json: unknown }> = {};
    for (let i = 0; i < 1500; i++) content[`Item${i}`] = { json: { i } };
    const imported = await fetch(`${srv.adminUrl}/admin/v1/import`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ environments: { e: { content } } }) });
    expect(imported.status).toBe(200);
    // The import was the first write: pruned to the bound at once.
    expect(logEntries().n).toBe(KEEP);
    for (let i = 0; i < STEP - 1; i++) await put('Item0', i);
    const between = logEntries();
    expect(between.n).toBe(KEEP + STEP - 1);
    await put('Item0', STEP);
    const after = logEntries();
    expect(after.n).toBe(KEEP);
    expect(after.newest).toBe(between.newest + 1);
  });
});

/**
 * The admin state of a PostgreSQL store on a real database: audit entries and webhooks are shared
 * by every node (two states on one database see each other's), secrets are sealed at rest, and a
 * node with another webhook key lists a webhook but cannot open its secret.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import type { AdminStateStore } from '../../../../src/admin/server/state.js';
import { openStore } from '../../../../src/store/index.js';
import { createDatabase } from '../../../helpers/postgres.js';

const cleanups: (() => Promise<void> | void)[] = [];
let url: string;

beforeEach(async () => {
  const db = await createDatabase();
  url = db.url;
  cleanups.push(db.drop);
  // The store's migrations create the admin tables.
  const store = await openStore(url);
  cleanups.push(() => store.close());
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function open(dataDir: string, log: (line: string) => void = () => undefined): AdminStateStore {
  const state = openAdminState(url, { dataDir, log });
  cleanups.push(() => state.close());
  return state;
}

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rcd-admin-pg-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('admin state on PostgreSQL', () => {
  it('shares audit entries and webhooks between nodes; secrets are sealed at rest', async () => {
    const dir = tempDir();
    const a = open(dir);
    const b = open(dir);
    for (let i = 0; i < 3; i++) await a.appendAudit({ actor: 'cli', tokenId: 'abcd1234', action: 'content.put', env: 'dev', target: `c${i}`, detail: { i } });
    const newest = await b.listAudit(2);
    expect(newest.map((e) => e.target)).toEqual(['c2', 'c1']);
    expect((await b.listAudit(10, newest[1]!.id)).map((e) => e.target)).toEqual(['c0']);

    const hook = await a.addWebhook('http://127.0.0.1:9/h', ['content.updated'], 'the-secret-value');
    expect(await b.listWebhooks()).toEqual([hook]);
    const raw = postgres(url, { max: 1, onnotice: () => undefined });
    try {
      const rows = await raw.unsafe<{ secret_sealed: string }[]>('SELECT secret_sealed FROM admin_webhooks');
      expect(rows).toHaveLength(1);
      expect(rows[0]!.secret_sealed).not.toContain('the-secret-value');
    } finally {
      await raw.end();
    }
    await b.deleteWebhook(hook.id);
    expect(await a.listWebhookInfo()).toEqual([]);
    await expect(a.deleteWebhook(hook.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('a node with another webhook key lists the webhook but does not deliver it, and says so', async () => {
    const a = open(tempDir());
    const lines: string[] = [];
    const other = open(tempDir(), (l) => lines.push(l));
    const hook = await a.addWebhook('http://127.0.0.1:9/h', ['content.updated'], 'sek');
    expect((await other.listWebhookInfo()).map((w) => w.id)).toEqual([hook.id]);
    expect(await other.listWebhooks()).toEqual([]);
    expect(lines.some((l) => l.includes(hook.id))).toBe(true);
  });

  it('writes an audit entry on a connection whose session the server ended while it was idle (57P01 or lost), without losing it', async () => {
    const state = open(tempDir());
    const raw = postgres(url, { max: 1, onnotice: () => undefined });
    const written: string[] = [];
    try {
      // Whether the idle connection hands on the server's 57P01 or is found lost depends on when the
      // driver reads its end: several rounds meet both.
      for (let i = 0; i < 6; i++) {
        await state.appendAudits([{ actor: 'cli', tokenId: 'abcd1234', action: 'content.put', env: 'dev', target: `t${i}`, detail: null }]);
        written.unshift(`t${i}`);
        // As a database restart does to every idle session: the server ends the admin state's session.
        const ended = await raw.unsafe<{ ended: boolean }[]>('SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
        expect(ended.length).toBeGreaterThan(0);
        expect(ended.every((r) => r.ended)).toBe(true);
      }
    } finally {
      await raw.end();
    }
    await state.appendAudits([{ actor: 'scheduler', tokenId: 'scheduler', action: 'content.put', env: 'dev', target: 'after', detail: null }]);
    expect((await state.listAudit(10)).map((e) => e.target)).toEqual(['after', ...written]);
  });
});

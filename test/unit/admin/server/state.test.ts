import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WEBHOOK_KEY_FILE } from '../../../../src/admin/server/sealed.js';
import { openAdminState } from '../../../../src/admin/server/open-state.js';
import type { AdminStateStore } from '../../../../src/admin/server/state.js';
import { ConfigError } from '../../../../src/runtime/config.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function open(url: string, dataDir?: string): AdminStateStore {
  const state = openAdminState(url, { dataDir });
  cleanups.push(() => state.close());
  return state;
}

describe('admin state', () => {
  it('appends audit entries and pages them newest first', async () => {
    const state = open('memory:');
    for (let i = 0; i < 5; i++) {
      await state.appendAudit({ actor: 'cli', tokenId: 'abcd1234', action: 'content.put', env: 'dev', target: `c${i}`, detail: { i } });
    }
    const newest = await state.listAudit(2);
    expect(newest.map((e) => e.target)).toEqual(['c4', 'c3']);
    expect(newest[0]).toMatchObject({ actor: 'cli', tokenId: 'abcd1234', action: 'content.put', env: 'dev', detail: { i: 4 } });
    expect(Date.parse(newest[0]!.at)).not.toBeNaN();
    const older = await state.listAudit(10, newest[1]!.id);
    expect(older.map((e) => e.target)).toEqual(['c2', 'c1', 'c0']);
  });

  it('stores webhooks with their secret and deletes them', async () => {
    const state = open('memory:');
    const hook = await state.addWebhook('http://127.0.0.1:9/h', ['content.updated'], 'sek');
    expect(hook.id).toMatch(/^wh_[0-9a-f]{16}$/);
    expect(await state.listWebhooks()).toEqual([hook]);
    await state.deleteWebhook(hook.id);
    expect(await state.listWebhooks()).toEqual([]);
    await expect(state.deleteWebhook(hook.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('keeps sqlite state in the store file across reopen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-state-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = `sqlite:${join(dir, 'sub', 'rcd.db')}`;
    const first = openAdminState(url);
    await first.appendAudit({ actor: 'token:x', tokenId: 'x', action: 'key.create', env: 'dev', target: 'k1', detail: null });
    const hook = await first.addWebhook('https://example.test/h', ['content.deleted', 'environment.synced'], 's');
    await first.close();
    const second = open(url);
    expect((await second.listAudit(10)).map((e) => e.action)).toEqual(['key.create']);
    expect(await second.listWebhooks()).toEqual([hook]);
  });

  it('memory state is private to each open', async () => {
    const a = open('memory:');
    const b = open('memory:');
    await a.addWebhook('http://127.0.0.1:9/h', ['content.updated'], 's');
    expect(await b.listWebhooks()).toEqual([]);
  });

  it('a webhook whose sealed secret does not open with the key file is skipped for delivery and logged once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-state-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = `sqlite:${join(dir, 'rcd.db')}`;
    const first = openAdminState(url, { dataDir: dir });
    const kept = await first.addWebhook('https://example.test/a', ['content.updated'], 'secret-a');
    await first.close();
    const keyFile = join(dir, WEBHOOK_KEY_FILE);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    // The key file is lost and a new one is made: the old sealed secret cannot open with it.
    rmSync(keyFile);
    const lines: string[] = [];
    const second = openAdminState(url, { dataDir: dir, log: (l) => lines.push(l) });
    cleanups.push(() => second.close());
    const fresh = await second.addWebhook('https://example.test/b', ['content.updated'], 'secret-b');
    expect(await second.listWebhooks()).toEqual([fresh]);
    expect(await second.listWebhooks()).toEqual([fresh]);
    expect(lines.filter((l) => l.includes(kept.id))).toHaveLength(1);
    expect((await second.listWebhookInfo()).map((w) => w.id)).toEqual([kept.id, fresh.id]);
  });

  it('refuses a key file that holds no key instead of sealing under a guess', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-state-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, WEBHOOK_KEY_FILE), 'not a key\n', { mode: 0o600 });
    expect(() => openAdminState(`sqlite:${join(dir, 'rcd.db')}`, { dataDir: dir })).toThrow(ConfigError);
  });

  it('memory state writes no key file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rcd-state-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const state = open('memory:', dir);
    const hook = await state.addWebhook('http://127.0.0.1:9/h', ['content.updated'], 'in-memory');
    expect(await state.listWebhooks()).toEqual([hook]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses unknown store URLs', () => {
    expect(() => openAdminState('mysql://x')).toThrow(/unsupported store URL/);
  });
});

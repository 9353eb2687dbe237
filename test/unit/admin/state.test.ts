import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openAdminState, type AdminStateStore } from '../../../src/admin/state.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function open(url: string): AdminStateStore {
  const state = openAdminState(url);
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

  it('refuses unknown store URLs', () => {
    expect(() => openAdminState('postgres://x')).toThrow(/unsupported store URL/);
  });
});

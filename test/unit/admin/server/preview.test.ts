/**
 * The preview and the sync plan on the real store (SQLite in memory): what each rule did for one
 * user, and a plan that matches the sync's own report item by item.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { previewContent } from '../../../../src/admin/server/preview.js';
import { planSync } from '../../../../src/admin/server/sync-plan.js';
import { RcdError } from '../../../../src/runtime/errors.js';
import { userMod, userUid } from '../../../../src/shared/identity.js';
import { openStore } from '../../../../src/store/index.js';
import type { ContentDetail, Store } from '../../../../src/store/types.js';

let store: Store;

beforeEach(async () => {
  store = await openStore('memory:');
  await store.putEnvironment('dev');
  await store.putEnvironment('live');
});

afterEach(async () => {
  await store.close();
});

async function detail(env: string, id: string): Promise<ContentDetail> {
  const d = await store.getContent(env, id);
  if (d === undefined) throw new Error(`no ${id}`);
  return d;
}

function userIn(lo: number, hi: number): string {
  for (let i = 0; ; i++) {
    if (userMod(userUid(`u${i}`)) >= lo && userMod(userUid(`u${i}`)) <= hi) return `u${i}`;
  }
}

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return err instanceof RcdError ? err.code : 'not an RcdError';
  }
  return 'no error';
}

describe('previewContent', () => {
  beforeEach(async () => {
    await store.putContent('dev', 'Shop', '{"price":1}', null);
    await store.putContent('dev', 'Shop', '{"price":2,"theme":"light"}', '2.0.0');
    await store.putMapping('dev', 'Shop', {
      rules: [
        { segment: 'vip', when: { vip: true }, patch: { price: 0 } },
        { segment: 'theme', variants: [{ name: 'dark', mod: [0, 499], patch: [{ op: 'replace', path: '/theme', value: 'dark' }] }] },
      ],
    });
  });

  it('applies the rules that match, with the variant of the user mod', async () => {
    const u = userIn(0, 499);
    const p = previewContent(await detail('dev', 'Shop'), { u, p: { vip: true }, v: '2.0.0' });
    expect(p.revision).toBe(2);
    expect(p.mod).toBe(userMod(userUid(u)));
    expect(p.answer).toEqual({ data: { price: 0, theme: 'dark' }, hash: p.hash, meta: { uid: p.uid, mod: p.mod, seg: [{ n: 'vip', v: null }, { n: 'theme', v: 'dark' }] } });
    expect(p.rules).toEqual([
      { index: 0, segment: 'vip', applied: true, variant: null, disabled: false },
      { index: 1, segment: 'theme', applied: true, variant: 'dark', disabled: false },
    ]);
  });

  it('lists a disabled rule as disabled and not applied, and the rules after it by their own index', async () => {
    await store.putMapping('dev', 'Shop', {
      rules: [
        { segment: 'vip', when: { vip: true }, disabled: true, patch: { price: 0 } },
        { segment: 'theme', variants: [{ name: 'dark', mod: [0, 499], patch: [{ op: 'replace', path: '/theme', value: 'dark' }] }] },
      ],
    });
    const p = previewContent(await detail('dev', 'Shop'), { u: userIn(0, 499), p: { vip: true }, v: '2.0.0' });
    expect(p.seg).toEqual([{ n: 'theme', v: 'dark' }]);
    expect(p.rules).toEqual([
      { index: 0, segment: 'vip', applied: false, variant: null, disabled: true },
      { index: 1, segment: 'theme', applied: true, variant: 'dark', disabled: false },
    ]);
  });

  it('reports a JSON Patch skipped on an older revision as not applied, as delivery skips it', async () => {
    const p = previewContent(await detail('dev', 'Shop'), { u: userIn(0, 499), p: { vip: true }, v: '1.0.0' });
    expect(p.revision).toBe(1);
    expect(p.seg).toEqual([{ n: 'vip', v: null }]);
    expect(p.rules.map((r) => r.applied)).toEqual([true, false]);
    const none = previewContent(await detail('dev', 'Shop'), { u: userIn(0, 499), v: '1.0.0' });
    expect(none.seg).toEqual([]);
    expect(none.rules.map((r) => r.applied)).toEqual([false, false]);
    expect(none.answerText).toBe(`{"data":{"price":1},"hash":"${none.hash}","meta":{"uid":${none.uid},"mod":${none.mod},"seg":[]}}`);
  });

  it('refuses a bad context and an app version no revision serves', async () => {
    await store.putContent('dev', 'New', '{}', '5.0.0');
    expect(code(() => previewContent({ id: 'x', envId: 'dev', revisions: [], mapping: null, createdAt: '', updatedAt: '' }, 'no'))).toBe('invalid_body');
    const shop = await detail('dev', 'Shop');
    expect(code(() => previewContent(shop, { u: 1 }))).toBe('invalid_body');
    expect(code(() => previewContent(shop, { v: '1.0' }))).toBe('invalid_body');
    const fresh = await detail('dev', 'New');
    expect(code(() => previewContent(fresh, { v: '4.9.9' }))).toBe('content_not_found');
    expect(previewContent(fresh, {}).revision).toBe(1);
  });
});

describe('planSync', () => {
  it('predicts the report of the sync that follows it, item by item, and writes nothing', async () => {
    await store.putContent('dev', 'Same', '{"a":1}', null);
    await store.putContent('dev', 'Text', '{"a":2}', null);
    await store.putContent('dev', 'Version', '{"a":3}', '1.0.0');
    await store.putContent('dev', 'Mapping', '{"a":4}', null);
    await store.putContent('dev', 'Unmapped', '{"a":5}', null);
    await store.putContent('dev', 'Fresh', '{"a":6}', null);
    await store.putMapping('dev', 'Mapping', { rules: [{ segment: 's', patch: { a: 40 } }] });
    await store.sync('dev', 'live', ['Same', 'Text', 'Version', 'Mapping', 'Unmapped']);
    await store.putMapping('live', 'Unmapped', { rules: [] });
    await store.putContent('dev', 'Text', '{"a":2} // edited', null);
    await store.putContent('dev', 'Version', '{"a":3}', '1.1.0');
    await store.putMapping('dev', 'Mapping', { rules: [{ segment: 's', patch: { a: 41 } }] });

    const plan = await planSync(store, 'dev', 'live', undefined);
    const seq = (await store.loadDirectory()).seq;
    const planned = plan.items.map((i) => [i.id, i.action]);
    expect(Object.fromEntries(planned)).toEqual({ Same: 'unchanged', Text: 'updated', Version: 'updated', Mapping: 'updated', Unmapped: 'updated', Fresh: 'created' });
    expect(plan.items.find((i) => i.id === 'Fresh')?.to).toBeNull();
    expect(plan.items.find((i) => i.id === 'Text')?.to?.text).toBe('{"a":2}');
    expect((await store.loadDirectory()).seq).toBe(seq);

    const report = await store.sync('dev', 'live');
    expect(report.items.map((i) => [i.id, i.action]).sort()).toEqual(planned.sort());
  });

  it('refuses unknown ids and environments as the sync does', async () => {
    await store.putContent('dev', 'A', '{}', null);
    await expect(planSync(store, 'dev', 'live', ['a', 'Nope'])).rejects.toMatchObject({ code: 'content_not_found', details: { missing: ['Nope'] } });
    await expect(planSync(store, 'dev', 'nowhere', undefined)).rejects.toMatchObject({ code: 'not_found' });
    await expect(planSync(store, 'nowhere', 'live', undefined)).rejects.toMatchObject({ code: 'not_found' });
    expect((await planSync(store, 'dev', 'live', ['a', 'A'])).items.map((i) => i.id)).toEqual(['A']);
  });
});

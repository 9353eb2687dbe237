import { describe, expect, it } from 'vitest';
import { BASE_SEED, poolVariant, scenarioByName, type RequestEntry } from '../../../bench/harness/scenarios.js';

describe('bench:cost --pool: which requests of a scenario are sent', () => {
  const mapped = scenarioByName('mapped').pool(BASE_SEED);
  const first = mapped[0]!;

  it('all: the pool as it is', () => {
    expect(poolVariant(mapped, 'all')).toEqual(mapped);
  });

  it('one: the first request alone', () => {
    expect(poolVariant(mapped, 'one')).toEqual([first]);
  });

  it("attributes: every user keeps its id and sends the first request's p and v", () => {
    const users = poolVariant(mapped, 'attributes');
    expect(users).toHaveLength(mapped.length);
    const firstBody = JSON.parse(first.body!) as { p: unknown; v: string };
    for (let i = 0; i < users.length; i++) {
      const sent = JSON.parse(users[i]!.body!) as { u: string; p: unknown; v: string };
      expect(sent.u).toBe(mapped[i]!.ctx.u);
      expect(sent.p).toEqual(firstBody.p);
      expect(sent.v).toBe(firstBody.v);
      expect(users[i]!.ctx).toMatchObject({ u: mapped[i]!.ctx.u, p: first.ctx.p, v: first.ctx.v });
      expect(users[i]!.path).toBe(mapped[i]!.path);
      expect(users[i]!.headers).toEqual(mapped[i]!.headers);
    }
    // The pool's variety was in the attributes: many distinct bodies' p before, one after.
    const attributesOf = (e: RequestEntry): string => JSON.stringify((JSON.parse(e.body!) as { p: unknown }).p);
    expect(new Set(mapped.map(attributesOf)).size).toBeGreaterThan(100);
    expect(new Set(users.map(attributesOf)).size).toBe(1);
    expect(new Set(users.map((e) => e.ctx.u)).size).toBeGreaterThan(100);
  });

  it('leaves requests without a body as they are (the catalog is a GET)', () => {
    const catalog = scenarioByName('catalog').pool(BASE_SEED);
    expect(catalog[0]!.body).toBeUndefined();
    expect(poolVariant(catalog, 'attributes')).toEqual(catalog);
  });
});

import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StoreFollower } from '../../../src/control/follower.js';
import { openStore, type Store } from '../../../src/store/index.js';
import { tempDir } from '../store/helpers.js';

const opened: Store[] = [];
let cleanup: () => void = () => undefined;
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
  cleanup();
});

async function twoConnections(): Promise<[Store, Store]> {
  const t = tempDir();
  cleanup = t.cleanup;
  const url = `sqlite:${join(t.dir, 'rcd.db')}`;
  const a = await openStore(url);
  const b = await openStore(url);
  opened.push(a, b);
  return [a, b];
}

const until = async (cond: () => boolean, ms = 2000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
};

describe('StoreFollower', () => {
  it('runs onChange when another connection commits, not for its own writes or while nothing happens', async () => {
    const [mine, other] = await twoConnections();
    let calls = 0;
    const follower = new StoreFollower(
      mine,
      () => {
        calls++;
        return Promise.resolve();
      },
      (err) => {
        throw err;
      },
    );
    await follower.start();
    try {
      await mine.putEnvironment('own-write');
      await new Promise((r) => setTimeout(r, 60));
      expect(calls).toBe(0);
      await other.putEnvironment('from-elsewhere');
      await until(() => calls === 1);
      expect(calls).toBe(1);
      // The change is readable through the follower's own connection once noticed.
      const batch = await mine.changesSince(0, 100);
      expect(batch.entries.map((e) => e.envId)).toContain('from-elsewhere');
      await new Promise((r) => setTimeout(r, 60));
      expect(calls).toBe(1);
    } finally {
      follower.stop();
    }
  });

  it('never runs two onChange at once; a change during one is picked up after it', async () => {
    const [mine, other] = await twoConnections();
    let running = 0;
    let most = 0;
    let calls = 0;
    const follower = new StoreFollower(
      mine,
      async () => {
        running++;
        most = Math.max(most, running);
        calls++;
        await new Promise((r) => setTimeout(r, 50));
        running--;
      },
      (err) => { throw err; },
    );
    await follower.start();
    try {
      await other.putEnvironment('one');
      await until(() => calls === 1);
      await other.putEnvironment('two');
      await until(() => calls === 2);
      expect(calls).toBe(2);
      expect(most).toBe(1);
    } finally {
      follower.stop();
    }
  });
});

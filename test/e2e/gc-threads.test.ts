// rcd is started with node's --single-threaded-gc (`npm start`, bin/rcd.js's first line, the systemd
// unit): every thread collects its own heap at its own priority instead of sharing each collection
// with V8's helper threads, which run below the delivery loops (src/runtime/heap.ts). Read from the
// real server's log and its own GC trace (node --trace-gc-nvp prints what each collection's helpers did).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, ROOT, call, startServer, type ServerProcess } from '../helpers/server-process.js';

const KEY = 'key-gc-threads-1';
const ADMIN_TOKEN = 'test-admin-token';
const running: ServerProcess[] = [];

afterAll(async () => {
  for (const s of running) await s.dispose();
});

/** The value of `name=` in one --trace-gc-nvp line (null when the line has none). */
function nvp(line: string, name: string): number | null {
  const m = new RegExp(`(?:^| )${name.replace(/\./g, '\\.')}=([\\d.]+)`).exec(line);
  return m === null ? null : Number(m[1]);
}

/** Requests enough for the delivery loop to fill its young generation several times over; all must answer 200. */
async function load(srv: ServerProcess): Promise<void> {
  const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
  const env = `${srv.adminUrl!}/admin/v1/environments/demo`;
  expect((await fetch(`${env}/keys`, { method: 'POST', headers: auth, body: JSON.stringify({ key: KEY }) })).status).toBe(201);
  const statuses = new Set<number>();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 500; i++) statuses.add((await call(srv.url, '/api/v1/config/PlayerSettings', { key: KEY, body: JSON.stringify({ u: `player-${i}`, p: { level: i } }) })).status);
    }),
  );
  expect([...statuses]).toEqual([200]);
}

describe('garbage collection on the thread whose heap it is', () => {
  it('started as npm start does, says so, and no collection under load shares its work with a helper thread', async () => {
    const srv = await startServer({ admin: true, seedDemo: true, command: [process.execPath, '--single-threaded-gc', '--trace-gc-nvp', BIN] });
    running.push(srv);
    expect(srv.stdout()).toContain('garbage collection: each thread collects its own heap (node --single-threaded-gc)');
    await load(srv);
    expect(await srv.stop()).toBe(0);
    const lines = srv.stdout().split('\n');
    const scavenges = lines.filter((l) => / gc=s /.test(l));
    expect(scavenges.length).toBeGreaterThan(0);
    for (const l of scavenges) expect(nvp(l, 'background.scavenge.parallel'), l.slice(0, 120)).toBe(0);
    for (const l of lines.filter((x) => / gc=mc /.test(x))) {
      expect(nvp(l, 'background.mark'), l.slice(0, 120)).toBe(0);
      expect(nvp(l, 'background.evacuate.copy'), l.slice(0, 120)).toBe(0);
    }
  });

  it('started without it, says how to turn it on', async () => {
    const srv = await startServer({ admin: false });
    running.push(srv);
    expect(srv.stdout()).toMatch(/garbage collection: V8's helper threads share each collection at the process's priority.*--single-threaded-gc/);
  });

  it('npm start, the rcd command and the systemd unit all pass the flag to node', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toMatch(/\bnode --single-threaded-gc bin\/rcd\.js serve$/);
    expect(readFileSync(BIN, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env -S node --single-threaded-gc');
    expect(readFileSync(join(ROOT, 'deploy', 'systemd', 'rcd.service'), 'utf8')).toMatch(/^ExecStart=\/usr\/bin\/node --single-threaded-gc \S+\/bin\/rcd\.js serve$/m);
  });
});

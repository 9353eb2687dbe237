import { describe, expect, it } from 'vitest';
import { hasSysNice, initialUserNamespace, niceLimit } from '../../../src/runtime/priority.js';

// Texts in the shapes Linux writes them (/proc/PID/status, uid_map, limits), so the right to take a
// thread's priority back is read without changing one.
describe('reading the right to go back to a higher priority', () => {
  it('finds CAP_SYS_NICE (bit 23) in CapEff', () => {
    expect(hasSysNice('Name:\tnode\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n')).toBe(true);
    expect(hasSysNice('CapEff:\t0000000000800000\n')).toBe(true);
    // Everything but bit 23; and an unprivileged process.
    expect(hasSysNice('CapEff:\t000001ffff7fffff\n')).toBe(false);
    expect(hasSysNice('CapEff:\t0000000000000000\n')).toBe(false);
    expect(hasSysNice('Name:\tnode\n')).toBe(false);
  });

  it('counts capabilities only in the initial user namespace', () => {
    expect(initialUserNamespace('         0          0 4294967295\n')).toBe(true);
    // A rootless container: root inside is uid 100000 outside, and the kernel checks the initial namespace.
    expect(initialUserNamespace('         0     100000      65536\n')).toBe(false);
  });

  it('reads the soft RLIMIT_NICE', () => {
    const limits = (soft: string, hard: string): string =>
      `Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \nMax nice priority         ${soft.padEnd(21)}${hard.padEnd(21)}\nMax realtime priority     0                    0                    \n`;
    expect(niceLimit(limits('0', '0'))).toBe(0);
    expect(niceLimit(limits('20', '20'))).toBe(20);
    expect(niceLimit(limits('unlimited', 'unlimited'))).toBe(Infinity);
    expect(niceLimit('Limit   Soft Limit\n')).toBe(0);
  });
});

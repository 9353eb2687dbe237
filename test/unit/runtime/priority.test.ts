import { describe, expect, it } from 'vitest';
import { deliveryPriority, hasSysNice, initialUserNamespace, mayLowerNiceTo, niceLimit } from '../../../src/runtime/priority.js';

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

describe('the priority delivery runs at', () => {
  it('stays with the process at --delivery-nice 0, and is never set below nice -20', () => {
    expect(deliveryPriority(0, 0)).toEqual({ nice: null, description: 'delivery loops run at the priority of the rest of the process (--delivery-nice 0)' });
    const far = deliveryPriority(39, 0);
    // Either raised to the floor or refused for want of the right, never past -20.
    if (far.nice !== null) expect(far.nice).toBe(-20);
    else expect(far.description).toContain('nice -20 needs CAP_SYS_NICE or an RLIMIT_NICE of 40');
  });

  it('names the nice value when the process may take it, and what it would need when not', () => {
    const p = deliveryPriority(5, 3);
    if (mayLowerNiceTo(-2)) expect(p).toEqual({ nice: -2, description: 'delivery loops and their worker pools run at nice -2, the rest of the process at 3' });
    else expect(p).toEqual({ nice: null, description: 'delivery loops run at the priority of the rest of the process: nice -2 needs CAP_SYS_NICE or an RLIMIT_NICE of 22 (docs/operations.md)' });
  });
});

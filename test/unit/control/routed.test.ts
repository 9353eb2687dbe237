import { MessageChannel, receiveMessageOnPort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import type { PackedContents } from '../../../src/control/protocol.js';
import { PackedContentReader, packChanges, packContents, type PackEntry } from '../../../src/control/routed.js';

const rev = (revId: number, hash: string, minAppVersion: string | null): { revId: number; hash: string; minAppVersion: string | null } => ({ revId, hash, minAppVersion });

/** Entries of every shape a delta carries: several environments, deletes, non-ASCII ids, nulls and empties. */
const ENTRIES: PackEntry[] = [
  { envId: 'prod', idLower: 'game', meta: { envId: 'prod', id: 'Game', idLower: 'game', revisions: [rev(1, 'a'.repeat(32), null), rev(9_007_199_254_740_991, 'b'.repeat(32), '1.5.0')], mappingId: 7 } },
  { envId: 'prod', idLower: 'gone', meta: null },
  { envId: 'qa', idLower: 'straße 😀', meta: { envId: 'qa', id: 'STRAẞE 😀', idLower: 'straße 😀', revisions: [rev(2, 'c', '')], mappingId: null } },
  { envId: 'prod', idLower: 'x'.repeat(256), meta: { envId: 'prod', id: 'X'.repeat(256), idLower: 'x'.repeat(256), revisions: [rev(3, '', null), rev(4, 'd', null), rev(5, 'e', '2.0.0')], mappingId: 0 } },
];

/** Every entry as an object, read through the loops' reader. */
function unpackContents(packed: PackedContents): PackEntry[] {
  const out: PackEntry[] = [];
  const r = new PackedContentReader(packed);
  while (r.next()) {
    const revisions = [];
    for (let i = 0; i < r.revisionCount; i++) revisions.push({ revId: r.revId(i), hash: r.hash(i), minAppVersion: r.minAppVersion(i) });
    out.push({ envId: r.envId, idLower: r.idLower, meta: r.revisionCount === 0 ? null : { envId: r.envId, id: r.id, idLower: r.idLower, revisions, mappingId: r.mappingId } });
  }
  return out;
}

/** The message as a loop receives it: through a real MessagePort (a structured clone). */
function received(packed: PackedContents): PackedContents {
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(packed);
  const m = receiveMessageOnPort(port2)!.message as PackedContents;
  port1.close();
  return m;
}

describe('packed contents', () => {
  it('read back exactly what was packed, after crossing a MessagePort', () => {
    const packed = received(packChanges(ENTRIES));
    expect(packed.count).toBe(4);
    expect(packed.envIds).toEqual(['prod', 'qa']);
    expect(unpackContents(packed)).toEqual(ENTRIES);
  });

  it('carries no object per entry: a fixed set of arrays and one string whatever the count', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ENTRIES[i % 4]!.meta ?? ENTRIES[0]!.meta!);
    const packed = packContents(many);
    expect(Object.values(packed).filter((v) => typeof v === 'object' && !ArrayBuffer.isView(v) && !Array.isArray(v))).toEqual([]);
    expect(packed.envIds.length).toBe(2);
    expect(unpackContents(received(packed)).map((e) => e.meta)).toEqual(many);
  });

  it('packs nothing as an empty set', () => {
    expect(unpackContents(packContents([]))).toEqual([]);
  });
});

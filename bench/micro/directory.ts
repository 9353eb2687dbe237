/**
 * Micro-benchmark: what the routing directory (src/delivery/directory.ts) costs the delivery loop's
 * heap per content item, and how long a full collection of that heap takes while it is alive. Every
 * mark-compact of the loop marks the whole directory, so its object count sets the length of the GC
 * pauses delivery sees at 50,000-100,000 items (bench/README.md, "Directory heap").
 *
 * Rows: the directory as built now (each item its own newest revision; older revisions only when
 * there are some), and the former layout rebuilt beside it for comparison (an array, grown by push,
 * and a revision object per item). Both read the same packed update (src/control/routed.ts), so
 * both count the id and hash strings they read out of it (ids under 13 characters are copies, longer
 * strings views of the update's text).
 *
 * Run: `node --expose-gc dist/bench/micro/directory.js [items]` (after `npm run build`); part of
 * `npm run bench:micro`. Without --expose-gc it refuses: the figures need full collections.
 */
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import type { RoutedContent, RoutedSnapshot } from '../../src/control/protocol.js';
import { PackedContentReader, packContents } from '../../src/control/routed.js';
import { Directory, MappingLibrary } from '../../src/delivery/directory.js';
import type { RevisionReader } from '../../src/store/types.js';

export interface DirectoryHeapRow {
  readonly name: string;
  readonly items: number;
  /** Heap bytes the structure holds per item, after full collections. */
  readonly bytesPerItem: number;
  /** Median of 5 full collections with the structure alive (the input snapshot is alive too). */
  readonly fullGcMs: number;
  /** The same with the snapshot alone: what the structure adds is the difference. */
  readonly baselineGcMs: number;
}

const NO_TEXTS: RevisionReader = {
  readRevision: () => undefined,
  readMapping: () => undefined,
  close: () => undefined,
};

/** `items` contents of one environment; one in ten has three revisions (two with minAppVersion). */
function contentsOf(items: number): RoutedContent[] {
  const contents: RoutedContent[] = [];
  let revId = 1;
  for (let i = 0; i < items; i++) {
    const id = `Item${String(i).padStart(6, '0')}`;
    const hash = (i.toString(16).padStart(8, '0') + 'c0ffee'.repeat(4)).slice(0, 32);
    const revisions =
      i % 10 === 0
        ? [
            { revId: revId++, hash: hash.replace(/.$/, '1'), minAppVersion: null },
            { revId: revId++, hash: hash.replace(/.$/, '2'), minAppVersion: '1.5.0' },
            { revId: revId++, hash, minAppVersion: '2.0.0' },
          ]
        : [{ revId: revId++, hash, minAppVersion: null }];
    contents.push({ envId: 'bench', id, idLower: id.toLowerCase(), revisions, mappingId: null });
  }
  return contents;
}

/** The former layout: what each item held before it became its own newest revision. */
function formerLayout(snapshot: RoutedSnapshot): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const c = new PackedContentReader(snapshot.contents);
  while (c.next()) {
    const revisions: { revId: number; hash: string; minVersion: string }[] = [];
    for (let i = c.revisionCount - 1; i >= 0; i--) revisions.push({ revId: c.revId(i), hash: c.hash(i), minVersion: c.minAppVersion(i) ?? '' });
    out.set(c.idLower, { id: c.id, revisions, mappingId: 0, mapping: null, mappingBroken: false });
  }
  return out;
}

function fullGc(): () => void {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the directory heap micro-benchmark needs node --expose-gc');
  return gc;
}

function heapUsed(gc: () => void): number {
  gc();
  gc();
  return v8.getHeapStatistics().used_heap_size;
}

function gcMedianMs(gc: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    gc();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[2]! * 10) / 10;
}

function measureHeap(name: string, items: number, snapshot: RoutedSnapshot, baselineGcMs: number, build: () => unknown, gc: () => void): DirectoryHeapRow {
  const before = heapUsed(gc);
  let held: unknown = build();
  const after = heapUsed(gc);
  const fullGcMs = gcMedianMs(gc);
  // Keeps the structure alive through the collections above (and the snapshot's strings with it).
  if (held === null || snapshot.contents.count !== items) throw new Error('nothing was built');
  held = null;
  return { name, items, bytesPerItem: Math.round((after - before) / items), fullGcMs, baselineGcMs };
}

export function runDirectoryMicro(items = 100_000): DirectoryHeapRow[] {
  const gc = fullGc();
  const snapshot: RoutedSnapshot = { seq: 1, environments: ['bench'], keys: [], contents: packContents(contentsOf(items)) };
  heapUsed(gc);
  const baseline = gcMedianMs(gc);
  return [
    measureHeap('directory (src/delivery/directory.ts)', items, snapshot, baseline, () => new Directory(snapshot, new MappingLibrary(NO_TEXTS, () => undefined), new Map()), gc),
    measureHeap('former layout (revisions array + object per item)', items, snapshot, baseline, () => formerLayout(snapshot), gc),
  ];
}

export function formatDirectoryTable(rows: readonly DirectoryHeapRow[]): string {
  const lines = ['### Routing directory heap (bench/micro/directory.ts)', '', '| layout | items | heap B/item | full GC, ms (median of 5) | of which the layout (GC minus the snapshot alone) |', '|---|---:|---:|---:|---:|'];
  for (const r of rows) {
    lines.push(`| ${r.name} | ${r.items.toLocaleString('en-US')} | ${r.bytesPerItem} | ${r.fullGcMs} | ${Math.round((r.fullGcMs - r.baselineGcMs) * 10) / 10} |`);
  }
  return lines.join('\n') + '\n';
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const items = process.argv[2] === undefined ? 100_000 : Number(process.argv[2]);
  console.log(formatDirectoryTable(runDirectoryMicro(items)));
}

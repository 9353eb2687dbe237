/**
 * Runs a step's content writes in memory over what the store reads: the step sees its own writes
 * (items created and deleted, revisions appended, mappings set) as it would inside a transaction,
 * and nothing reaches the store. Reads of rows it has not written are passed on to the driver (a
 * read-only snapshot transaction) and remembered, since a snapshot does not change under them.
 * Savepoints are kept as an undo log. What a preview replays is content writes only: a row call
 * that writes anything else (a schedule, a rollout, a lease) is a bug here and throws.
 *
 * Ids of what is created in memory are negative, so they never meet the store's own.
 */
import { RcdError } from '../../runtime/errors.js';
import type { ContentRow, EnvRow, MappingRow, RevisionRow } from '../sqlite/sql.js';
import { call, type ContentHead, type NewRevision, type RowCall, type Rows, type Step } from './rows.js';
import { failure, isParallel, ok, resume, settled, START, type Outcome } from './drive.js';

/** Writes answered here alone (plain methods); the other `_` methods are steps that may read. */
const LOCAL = new Set<keyof Rows>(['insertContent', 'insertContents', 'deleteContent', 'appendRevision', 'insertRevisions', 'insertMapping', 'clearMapping', 'savepoint', 'rollbackTo', 'releaseSavepoint']);
/** Reads passed on to the store as they are. */
const PASSED = new Set<keyof Rows>(['storeNowMs', 'pendingTouching', 'getSchedule', 'listSchedules', 'openTouching']);

export class Overlay {
  /** env \0 key -> the item's pk, or null: known absent (never there, or deleted here). */
  private readonly keys = new Map<string, number | null>();
  /** The current row of every item read or created here. */
  private readonly rows = new Map<number, ContentRow>();
  /** Revisions appended here, per item, oldest first. */
  private readonly added = new Map<number, RevisionRow[]>();
  /** Items created here (the store holds no revision of them) or deleted here. */
  private readonly fresh = new Set<number>();
  private readonly gone = new Set<number>();
  private readonly mappings = new Map<number, MappingRow>();
  private readonly envs = new Map<string, EnvRow | undefined>();
  /** How to undo each change, newest last; a savepoint is a length of it. */
  private readonly undo: (() => void)[] = [];
  private readonly savepoints: { name: string; at: number }[] = [];
  private nextId = -1;
  /** Row calls answered since one was last passed on (see answer). */
  private answered = 0;

  constructor(private readonly turnEvery = 256) {}

  /** Answers one row call, passing reads on. */
  *answer(c: RowCall): Step<unknown> {
    if (++this.answered >= this.turnEvery) {
      // A cheap read now and then: a driver that yields to its event loop between row calls
      // (the SQLite preview's) gets a turn also while every call is answered here.
      this.answered = 0;
      yield* call('storeNowMs');
    }
    const own = HANDLERS.get(c.method);
    if (own !== undefined) return own.local ? own.fn.apply(this, c.args as unknown[]) : yield* (own.fn.apply(this, c.args as unknown[]) as Step<unknown>);
    if (PASSED.has(c.method)) return yield c;
    throw new RcdError('internal', `${c.method} does not run in memory`);
  }

  private set<K, V>(map: Map<K, V>, key: K, value: V): void {
    const had = map.has(key);
    const before = map.get(key);
    map.set(key, value);
    this.undo.push(() => (had ? map.set(key, before as V) : map.delete(key)));
  }

  private addTo<K>(set: Set<K>, key: K): void {
    if (set.has(key)) return;
    set.add(key);
    this.undo.push(() => set.delete(key));
  }

  /** A row read from the store, not known here yet. */
  private remember(row: ContentRow): ContentRow {
    this.set(this.keys, row.env_id + '\0' + row.id_lower, row.content_pk);
    this.set(this.rows, row.content_pk, row);
    return row;
  }

  private patch(pk: number, fields: Partial<ContentRow>): void {
    const row = this.rows.get(pk);
    if (row === undefined) throw new RcdError('internal', `item ${pk} was not read before it was written`);
    this.set(this.rows, pk, { ...row, ...fields });
  }

  /** True when the store may hold revisions of the item (it was not created or deleted here). */
  private stored(pk: number): boolean {
    return !this.fresh.has(pk) && !this.gone.has(pk);
  }

  /** Environments are never written here: a read of one is kept for the whole step. */
  *_getEnv(envId: string): Step<EnvRow | undefined> {
    if (this.envs.has(envId)) return this.envs.get(envId);
    const row = yield* call('getEnv', envId);
    this.envs.set(envId, row);
    return row;
  }

  *_findContent(envId: string, idLower: string): Step<ContentRow | undefined> {
    const k = envId + '\0' + idLower;
    if (this.keys.has(k)) {
      const pk = this.keys.get(k)!;
      return pk === null ? undefined : this.rows.get(pk);
    }
    const row = yield* call('findContent', envId, idLower);
    if (row === undefined) {
      this.set(this.keys, k, null);
      return undefined;
    }
    return this.remember(row);
  }

  *_contentsOf(envId: string): Step<ContentRow[]> {
    const out = new Map<string, ContentRow>();
    for (const row of yield* call('contentsOf', envId)) {
      const mine = this.known(envId, row.id_lower);
      if (mine === undefined) out.set(row.id_lower, this.remember(row));
      else if (mine !== null) out.set(row.id_lower, mine);
    }
    for (const pk of this.fresh) {
      const row = this.rows.get(pk)!;
      if (row.env_id === envId && !this.gone.has(pk)) out.set(row.id_lower, row);
    }
    return [...out.values()].sort((a, b) => (a.id_lower < b.id_lower ? -1 : a.id_lower > b.id_lower ? 1 : 0));
  }

  /** The item as written here: a row, null (absent), or undefined (not known here). */
  private known(envId: string, idLower: string): ContentRow | null | undefined {
    const k = envId + '\0' + idLower;
    if (!this.keys.has(k)) return undefined;
    const pk = this.keys.get(k)!;
    return pk === null ? null : this.rows.get(pk)!;
  }

  _insertContent(envId: string, idLower: string, id: string, at: string): ContentRow {
    const row: ContentRow = { content_pk: this.nextId--, env_id: envId, id_lower: idLower, id, mapping_id: null, created_at: at, updated_at: at };
    this.set(this.keys, envId + '\0' + idLower, row.content_pk);
    this.set(this.rows, row.content_pk, row);
    this.addTo(this.fresh, row.content_pk);
    return row;
  }

  _insertContents(envId: string, items: readonly { readonly idLower: string; readonly id: string }[], at: string): ContentRow[] {
    const out: ContentRow[] = [];
    for (const i of items) out.push(this._insertContent(envId, i.idLower, i.id, at));
    return out;
  }

  _deleteContent(contentPk: number): void {
    const row = this.rows.get(contentPk);
    if (row === undefined) throw new RcdError('internal', `item ${contentPk} was not read before it was deleted`);
    this.set(this.keys, row.env_id + '\0' + row.id_lower, null);
    this.addTo(this.gone, contentPk);
  }

  *_newestRevision(contentPk: number): Step<RevisionRow | undefined> {
    const mine = this.added.get(contentPk);
    if (mine !== undefined && mine.length > 0) return mine[mine.length - 1];
    return this.stored(contentPk) ? yield* call('newestRevision', contentPk) : undefined;
  }

  *_newestHash(contentPk: number): Step<string | undefined> {
    const mine = this.added.get(contentPk);
    if (mine !== undefined && mine.length > 0) return mine[mine.length - 1]!.hash;
    return this.stored(contentPk) ? yield* call('newestHash', contentPk) : undefined;
  }

  *_revision(contentPk: number, number: number): Step<RevisionRow | undefined> {
    const mine = this.added.get(contentPk)?.find((r) => r.number === number);
    if (mine !== undefined) return mine;
    return this.stored(contentPk) ? yield* call('revision', contentPk, number) : undefined;
  }

  *_revisions(contentPk: number): Step<RevisionRow[]> {
    const base = this.stored(contentPk) ? yield* call('revisions', contentPk) : [];
    return [...base, ...(this.added.get(contentPk) ?? [])];
  }

  *_contentHeads(envId: string, keys: readonly string[]): Step<ContentHead[]> {
    const out: ContentHead[] = [];
    for (const key of keys) {
      const content = yield* this._findContent(envId, key);
      out.push({ content, newest: content === undefined ? undefined : yield* this._newestRevision(content.content_pk) });
    }
    return out;
  }

  _appendRevision(contentPk: number, number: number, text: string, compiled: Pick<RevisionRow, 'minified' | 'hash'>, minAppVersion: string | null, at: string): number {
    const row: RevisionRow = { rev_id: this.nextId--, number, text, minified: compiled.minified, hash: compiled.hash, min_app_version: minAppVersion, created_at: at };
    let list = this.added.get(contentPk);
    if (list === undefined) {
      list = [];
      this.set(this.added, contentPk, list);
    }
    const appended = list;
    appended.push(row);
    this.undo.push(() => appended.pop());
    this.patch(contentPk, { updated_at: at });
    return number;
  }

  _insertRevisions(revisions: readonly NewRevision[], at: string): void {
    for (const r of revisions) this._appendRevision(r.contentPk, r.number, r.text, r.compiled, r.minAppVersion, at);
  }

  *_getMapping(mappingId: number | null): Step<MappingRow | undefined> {
    if (mappingId === null) return undefined;
    if (mappingId < 0) return this.mappings.get(mappingId);
    return yield* call('getMapping', mappingId);
  }

  _insertMapping(contentPk: number, json: string, ruleCount: number, at: string): number {
    const mappingId = this.nextId--;
    this.set(this.mappings, mappingId, { mapping_id: mappingId, json, rule_count: ruleCount });
    this.patch(contentPk, { mapping_id: mappingId, updated_at: at });
    return mappingId;
  }

  _clearMapping(contentPk: number, at: string): void {
    this.patch(contentPk, { mapping_id: null, updated_at: at });
  }

  _savepoint(name: string): void {
    this.savepoints.push({ name, at: this.undo.length });
  }

  _rollbackTo(name: string): void {
    const sp = this.find(name);
    while (this.undo.length > sp.at) this.undo.pop()!();
  }

  _releaseSavepoint(name: string): void {
    const sp = this.find(name);
    this.savepoints.length = this.savepoints.lastIndexOf(sp);
  }

  private find(name: string): { name: string; at: number } {
    for (let i = this.savepoints.length - 1; i >= 0; i--) if (this.savepoints[i]!.name === name) return this.savepoints[i]!;
    throw new RcdError('internal', `no savepoint ${name}`);
  }
}

interface Handler {
  /** Answered here alone (a plain method), or a step that may pass reads on. */
  readonly local: boolean;
  readonly fn: (this: Overlay, ...args: readonly unknown[]) => unknown;
}

/** Overlay's `_name` members by the row call they answer. */
const HANDLERS = new Map<string, Handler>(
  Object.getOwnPropertyNames(Overlay.prototype)
    .filter((name) => name.startsWith('_'))
    .map((name) => [name.slice(1), { local: LOCAL.has(name.slice(1) as keyof Rows), fn: (Overlay.prototype as unknown as Record<string, Handler['fn']>)[name]! }]),
);

/**
 * `step` with its writes kept in `overlay`: the steps run in parallel run one after another here,
 * each to its end, and the first failure is thrown, as the drivers do.
 */
export function* inMemory<T>(step: Step<T>, overlay: Overlay = new Overlay()): Step<T> {
  let last = START;
  for (;;) {
    const next = resume(step, last);
    if (next.done === true) return next.value;
    last = isParallel(next.value) ? yield* inMemoryAll(next.value.parallel, overlay) : yield* answerInMemory(overlay, next.value);
  }
}

function* answerInMemory(overlay: Overlay, c: RowCall): Step<Outcome> {
  try {
    return ok(yield* overlay.answer(c));
  } catch (err) {
    return failure(err);
  }
}

function* inMemoryAll(steps: readonly Step<unknown>[], overlay: Overlay): Step<Outcome> {
  const outcomes: Outcome[] = [];
  for (const s of steps) outcomes.push(yield* answerInMemoryStep(s, overlay));
  return settled(outcomes);
}

function* answerInMemoryStep(step: Step<unknown>, overlay: Overlay): Step<Outcome> {
  try {
    return ok(yield* inMemory(step, overlay));
  } catch (err) {
    return failure(err);
  }
}

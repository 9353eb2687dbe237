/**
 * The pieces of live-ops on a clock the console's screens share (docs/schedule.md): a time input
 * whose zone is said and sent, the timeline of scheduled changes with reschedule and cancel, and the
 * form that schedules a change.
 *
 * Time zone, decided: the input is a `datetime-local` read in the zone the editor picks: this
 * browser's own zone (named, with its offset at the chosen time) or UTC, which live-ops calendars
 * are often kept in; a time the zone skips is refused and one it has twice asks which. It is sent
 * as an RFC 3339 instant (UTC, `Z`), and the timeline shows each change's time in both zones, so
 * nobody has to guess whose midnight a change meant.
 */
import { useState } from 'preact/hooks';
import { api, apiWrite, seg, type Schedule, type ScheduleStatus } from './api.js';
import { Editor, jsoncDiagnostics } from './editor.js';
import { ChangeWrites } from './parts/change-writes.js';
import { CheckGroup } from './parts/check-group.js';
import { useConfirmWrite } from './parts/confirm-write.js';
import { useFollow } from './parts/use-follow.js';
import { useConflictGate } from './parts/conflict-warning.js';
import { FieldError, fieldAttrs, unplaced } from './parts/field-error.js';
import { OutcomeLines, useOutcome } from './parts/outcome.js';
import { useLoad } from './parts/use-load.js';
import { BROWSER_ZONE, instantIn, offsetTextAt, splitValue, timeProblem, WallTimeCheck } from './parts/wall-time-check.js';
import { when } from './parts/when.js';

export type Zone = 'local' | 'utc';

const LOCAL_ZONE = BROWSER_ZONE;

/** The IANA name of a zone choice. */
export function zoneName(zone: Zone): string {
  return zone === 'utc' ? 'UTC' : LOCAL_ZONE;
}

/**
 * The instant a `datetime-local` value names in `zone` (ISO, UTC), or null when it is not one: a
 * time in a gap of the zone, or one that happens twice and was not chosen (wall-time-check.tsx).
 */
export function instantOf(value: string, zone: Zone): string | null {
  return instantIn(value, zoneName(zone));
}

/** A time shown in this browser's zone and in UTC. */
export function bothZones(iso: string): string {
  const d = new Date(iso);
  const local = d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
  return `${local} (${LOCAL_ZONE}) = ${when(iso)}`;
}

export function TimeInput({ label, value, zone, onValue, onZone }: { label: string; value: string; zone: Zone; onValue: (v: string) => void; onZone: (z: Zone) => void }): preact.JSX.Element {
  return (
    <>
      <label>
        {label} <input type="datetime-local" step={1} value={splitValue(value).wall} onInput={(e) => onValue(e.currentTarget.value)} required />
      </label>
      <label>
        Time zone of {label.toLowerCase()}{' '}
        <select value={zone} onChange={(e) => onZone(e.currentTarget.value as Zone)}>
          <option value="local">
            This browser's: {LOCAL_ZONE} ({offsetTextAt(value, LOCAL_ZONE, Date.now())})
          </option>
          <option value="utc">UTC</option>
        </select>
      </label>
      <WallTimeCheck label={label} value={value} zone={zoneName(zone)} onValue={onValue} />
    </>
  );
}

/** One line of a change's ops: what it does to which item. */
function opSummary(op: Schedule['ops'][number]): string {
  switch (op.op) {
    case 'sync':
      return `sync to ${String(op.to)}${Array.isArray(op.ids) ? ` (${(op.ids as string[]).join(', ')})` : ' (every item)'}`;
    case 'content.rollback':
      return `roll ${op.id ?? ''} back to revision ${String(op.to)}`;
    case 'rule.set':
      return `rule ${String(op.rule)} of ${op.id ?? ''}: ${op.disabled === true ? 'disabled' : `mod ${JSON.stringify(op.mod)}`}`;
    default:
      return `${op.op} ${op.id ?? ''}${op.bytes === undefined ? '' : ` (${op.bytes} bytes)`}`;
  }
}

function outcomeOf(s: Schedule): string {
  if (s.status === 'applied') return `applied ${when(s.settledAt)}${s.lateMs === null ? '' : `, ${s.lateMs} ms after its time`}`;
  if (s.status === 'failed') return `failed: ${s.error?.message ?? ''} (${s.error?.code ?? ''})`;
  if (s.status === 'cancelled') return `cancelled: ${s.cancelReason ?? ''}`;
  if (s.status === 'paused') return 'paused (its rollout is paused)';
  return 'pending';
}

const STATUSES: ScheduleStatus[] = ['pending', 'paused', 'applied', 'failed', 'cancelled'];

/**
 * The scheduled changes of an environment (or of one item) in time order: status at a glance, the
 * outcome of settled ones, and for open ones a reschedule and a cancel. `refresh` changes when the
 * caller scheduled something.
 */
export function Timeline({ env, id, refresh }: { env: string; id?: string; refresh: number }): preact.JSX.Element {
  const [shown, setShown] = useState<Set<ScheduleStatus>>(new Set(STATUSES));
  const [item, setItem] = useState('');
  const filterId = id ?? item.trim();
  const query = new URLSearchParams({ limit: '1000' });
  if (filterId !== '') query.set('id', filterId);
  const list = useLoad(() => api<{ schedules: Schedule[] }>('GET', `environments/${seg(env)}/schedules?${query.toString()}`), [env, filterId, refresh]);
  useFollow(list.reload, env);
  const confirm = useConfirmWrite();
  const [moving, setMoving] = useState<string | null>(null);
  const [moveTo, setMoveTo] = useState('');
  const [zone, setZone] = useState<Zone>('local');
  const outcome = useOutcome();
  const rows = (list.data?.schedules ?? []).filter((s) => shown.has(s.status));

  async function act(s: Schedule, method: 'PATCH' | 'DELETE', comment: string): Promise<void> {
    const done = await outcome.attempt(async () => {
      const path = `environments/${seg(env)}/schedules/${seg(s.id)}`;
      if (method === 'DELETE') {
        await apiWrite('DELETE', path, comment);
        list.reload();
        return `Cancelled ${s.id}.`;
      }
      const at = instantOf(moveTo, zone);
      if (at === null) throw new Error('choose the new time');
      const moved = await apiWrite<Schedule>('PATCH', path, comment, { at });
      setMoving(null);
      list.reload();
      return `Moved ${s.id} to ${bothZones(moved.at)}.`;
    });
    // Refused (it applied or was cancelled meanwhile): the list shows what it is now.
    if (!done) list.reload();
  }

  /** Asks first, naming the change: what it does and when. */
  function ask(s: Schedule, method: 'PATCH' | 'DELETE'): void {
    const what = `${s.id} (${s.ops.map(opSummary).join('; ')}, due ${bothZones(s.at)})`;
    const at = instantOf(moveTo, zone);
    confirm.ask(
      method === 'DELETE'
        ? { question: `Cancel scheduled change ${what}? It will never apply.`, yes: `Yes, cancel ${s.id}`, run: (c) => act(s, method, c) }
        : { question: `Move scheduled change ${what} to ${at === null ? '(no time chosen)' : bothZones(at)}?`, yes: `Yes, move ${s.id}`, run: (c) => act(s, method, c) },
    );
  }

  return (
    <section aria-labelledby={`timeline-${id ?? 'env'}`}>
      <h3 id={`timeline-${id ?? 'env'}`}>{id === undefined ? `Timeline of ${env}` : `Scheduled changes of ${id}`}</h3>
      <div class="row">
        <CheckGroup
          legend="Show"
          options={STATUSES}
          isChecked={(st) => shown.has(st)}
          onToggle={(st, on) => {
            const next = new Set(shown);
            if (on) next.add(st);
            else next.delete(st);
            setShown(next);
          }}
        />
        {id === undefined && (
          <label>
            Only changes of item <input value={item} onInput={(e) => setItem(e.currentTarget.value)} placeholder="content id" />
          </label>
        )}
      </div>
      {confirm.dialog}
      <OutcomeLines outcome={outcome} loadError={list.error} />
      <ol class="timeline" aria-label={id === undefined ? `Scheduled changes of ${env}` : `Scheduled changes of ${id}`}>
        {rows.length === 0 && <li class="muted">No scheduled changes{shown.size < STATUSES.length ? ' with these statuses' : ''}.</li>}
        {rows.map((s) => (
          <li key={s.id} class={`timeline-${s.status}`} aria-label={`${s.status} change ${s.id}`}>
            <p>
              <strong class="badge">{s.status}</strong> <time dateTime={s.at}>{bothZones(s.at)}</time>
              {s.note !== '' && <span> — {s.note}</span>}
            </p>
            <ul>
              {s.ops.map((op, i) => (
                <li key={i}>{opSummary(op)}</li>
              ))}
            </ul>
            <p class="muted">
              {outcomeOf(s)}; scheduled by {s.createdBy} <code>{s.id}</code>
              {s.rollout !== null && <span>, step {(s.rollout.step ?? 0) + 1} of rollout {s.rollout.id}</span>}
            </p>
            <ChangeWrites env={env} schedule={s} onEdited={list.reload} />
            {(s.status === 'pending' || s.status === 'paused') && (
              <div class="row">
                {moving === s.id ? (
                  <>
                    <TimeInput label="New time" value={moveTo} zone={zone} onValue={setMoveTo} onZone={setZone} />
                    <button type="button" onClick={() => ask(s, 'PATCH')}>
                      Move {s.id}
                    </button>
                  </>
                ) : (
                  <button type="button" onClick={() => setMoving(s.id)} aria-label={`Reschedule ${s.id}`}>
                    Reschedule
                  </button>
                )}
                <button type="button" onClick={() => ask(s, 'DELETE')} aria-label={`Cancel ${s.id}`}>
                  Cancel change
                </button>
              </div>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

type OpKind = 'content.put' | 'mapping.put' | 'mapping.delete' | 'content.rollback' | 'content.delete';

const OP_LABELS: Record<OpKind, string> = {
  'content.put': 'Put content (a new revision)',
  'mapping.put': 'Put the mapping',
  'mapping.delete': 'Delete the mapping',
  'content.rollback': 'Roll back to a revision',
  'content.delete': 'Delete the item',
};

/**
 * Schedules one write of an item (of `id` when given, else of the item named in the form); the
 * server checks it as the write itself would be, and its refusal is shown as it comes.
 */
export function ScheduleForm({ env, id, initialText, onScheduled }: { env: string; id?: string; initialText?: string; onScheduled: () => void }): preact.JSX.Element {
  const [kind, setKind] = useState<OpKind>('content.put');
  const [item, setItem] = useState(id ?? '');
  const [value, setValue] = useState('');
  const [zone, setZone] = useState<Zone>('local');
  const [text, setText] = useState(initialText ?? '{\n}\n');
  const [mapping, setMapping] = useState('{\n  "rules": []\n}\n');
  const [revision, setRevision] = useState('1');
  const [base, setBase] = useState('');
  const [note, setNote] = useState('');
  const outcome = useOutcome();
  const gate = useConflictGate();
  const fid = (field: string): string => `schedule-${id ?? 'env'}-${field}-error`;

  function request(): { at: string; ops: Record<string, unknown>[] } {
    const at = instantOf(value, zone);
    if (at === null) throw new Error(timeProblem(value, zoneName(zone)) ?? 'choose the time the change takes effect');
    const target = (id ?? item).trim();
    let op: Record<string, unknown>;
    if (kind === 'content.put') op = { op: kind, id: target, text };
    else if (kind === 'mapping.put') op = { op: kind, id: target, mapping: JSON.parse(mapping) as unknown };
    else if (kind === 'content.rollback') op = { op: kind, id: target, to: Number(revision) };
    else op = { op: kind, id: target };
    if (base.trim() !== '') op.baseRevision = Number(base);
    return { at, ops: [op] };
  }

  async function submit(e: Event): Promise<void> {
    e.preventDefault();
    let write: { at: string; ops: Record<string, unknown>[] };
    try {
      write = request();
    } catch (err) {
      outcome.setError(err);
      outcome.setStatus('');
      return;
    }
    // Pending changes it would make fail are named first, and it waits for the choice.
    await gate.guard(env, write, 'Scheduling this change', async () => {
      const scheduled = await outcome.attempt(async () => {
        const made = await api<Schedule>('POST', `environments/${seg(env)}/schedules`, { ...write, ...(note.trim() === '' ? {} : { note: note.trim() }) });
        onScheduled();
        return `Scheduled ${made.id} for ${bothZones(made.at)}.`;
      });
      // A failed attempt leaves no sentence of an earlier one standing beside its error.
      if (!scheduled) outcome.setStatus('');
    });
  }

  return (
    <form onSubmit={(e) => void submit(e)} aria-labelledby={`schedule-form-${id ?? 'env'}`}>
      <h3 id={`schedule-form-${id ?? 'env'}`}>Schedule a change{id === undefined ? '' : ` of ${id}`}</h3>
      <div class="row">
        <label>
          Change{' '}
          <select value={kind} onChange={(e) => setKind(e.currentTarget.value as OpKind)}>
            {(Object.keys(OP_LABELS) as OpKind[]).map((k) => (
              <option key={k} value={k}>
                {OP_LABELS[k]}
              </option>
            ))}
          </select>
        </label>
        {id === undefined && (
          <label>
            Content id <input value={item} onInput={(e) => setItem(e.currentTarget.value)} required {...fieldAttrs(fid('id'), 'schedule', 'id', outcome.error)} />
          </label>
        )}
        <TimeInput label="Takes effect at" value={value} zone={zone} onValue={setValue} onZone={setZone} />
      </div>
      <FieldError id={fid('id')} form="schedule" field="id" error={outcome.error} />
      <FieldError id={fid('at')} form="schedule" field="at" error={outcome.error} />
      {kind === 'content.put' && <Editor label="JSONC of the scheduled change" initial={initialText ?? '{\n}\n'} resetKey={initialText ?? ''} onChange={setText} check={jsoncDiagnostics} />}
      <FieldError id={fid('text')} form="schedule" field="text" error={outcome.error} />
      {kind === 'mapping.put' && <Editor label="Rules of the scheduled change (JSON)" initial={mapping} resetKey="mapping" onChange={setMapping} check={() => []} />}
      <FieldError id={fid('mapping')} form="schedule" field="mapping" error={outcome.error} />
      <div class="row">
        {kind === 'content.rollback' && (
          <label>
            Revision to restore <input type="number" min={1} value={revision} onInput={(e) => setRevision(e.currentTarget.value)} required {...fieldAttrs(fid('revision'), 'schedule', 'revision', outcome.error)} />
          </label>
        )}
        <label>
          Only if still at revision <input type="number" min={0} value={base} onInput={(e) => setBase(e.currentTarget.value)} placeholder="(optional)" {...fieldAttrs(fid('base'), 'schedule', 'base', outcome.error)} />
        </label>
        <label>
          Note <input value={note} onInput={(e) => setNote(e.currentTarget.value)} maxLength={1000} placeholder="e.g. Halloween on" {...fieldAttrs(fid('note'), 'schedule', 'note', outcome.error)} />
        </label>
        <button type="submit">Schedule change</button>
      </div>
      {['revision', 'base', 'note'].map((f) => (
        <FieldError key={f} id={fid(f)} form="schedule" field={f} error={outcome.error} />
      ))}
      {gate.warning}
      <OutcomeLines outcome={{ ...outcome, error: unplaced('schedule', outcome.error) }} />
    </form>
  );
}

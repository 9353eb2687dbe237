/**
 * What one scheduled change writes, opened from its timeline entry (docs/console.md, "What a
 * scheduled change writes"): for each item it writes, a line diff of the content text and of the
 * mapping (a rule's new range shows there) against what is live now or against the state just
 * before its time (the earlier pending changes folded in, named); whether it would fail at its time
 * as things stand; and, for a pending change, its text edited in place: checked by the server as
 * when it was scheduled, the refusal shown beside the text, a conflict with later changes warned of.
 */
import { useState } from 'preact/hooks';
import type { Schedule } from '../api.js';
import { changeWrites, editChangeOps, type ChangeRef, type ItemState, type ItemWrites } from '../changes-api.js';
import { Editor, jsoncDiagnostics } from '../editor.js';
import { useConflictGate } from './conflict-warning.js';
import { Diff } from './diff.js';
import { FieldError, unplaced } from './field-error.js';
import { ErrorBox } from './messages.js';
import { OutcomeLines, useOutcome } from './outcome.js';
import { useLoad } from './use-load.js';
import { when } from './when.js';

type Base = 'now' | 'before';

const BASES: Record<Base, string> = { now: 'what is live now', before: 'the state just before its time' };

/** The toggle and, when open, the panel. `onEdited` runs after the change's text was saved. */
export function ChangeWrites({ env, schedule, onEdited }: { env: string; schedule: Schedule; onEdited: () => void }): preact.JSX.Element {
  const [open, setOpen] = useState(false);
  return (
    <div class="change-writes">
      <button type="button" aria-expanded={open} aria-label={`What ${schedule.id} writes`} onClick={() => setOpen(!open)}>
        {open ? 'Hide what it writes' : 'What it writes'}
      </button>
      {open && <Panel env={env} schedule={schedule} onEdited={onEdited} />}
    </div>
  );
}

function Panel({ env, schedule, onEdited }: { env: string; schedule: Schedule; onEdited: () => void }): preact.JSX.Element {
  const [tick, setTick] = useState(0);
  const writes = useLoad(() => changeWrites(env, schedule.id), [env, schedule.id, schedule.status, schedule.at, tick]);
  const [base, setBase] = useState<Base>('now');
  const w = writes.data;
  const open = schedule.status === 'pending' || schedule.status === 'paused';
  return (
    <section role="region" aria-label={`What ${schedule.id} writes`} class="writes">
      <ErrorBox error={writes.error} />
      {w !== null && open && (
        <>
          <label>
            Compare with{' '}
            <select value={base} onChange={(e) => setBase(e.currentTarget.value as Base)}>
              {(Object.keys(BASES) as Base[]).map((b) => (
                <option key={b} value={b}>
                  {BASES[b]}
                </option>
              ))}
            </select>
          </label>
          <Earlier earlier={w.earlier} />
          {w.error !== null && (
            <p role="alert" class="error">
              As things stand it would fail at its time, writing nothing: {w.error.message} ({w.error.code})
            </p>
          )}
        </>
      )}
      {w !== null && !open && <p class="muted">It is {schedule.status}: what it writes is shown against what is live now.</p>}
      {w?.items.map((item) => <ItemDiff key={`${item.env}/${item.id}`} item={item} base={open ? base : 'now'} failing={w.error !== null} settled={!open} />)}
      {w !== null && w.items.length === 0 && <p class="muted">It names no item (a sync of every item): see its ops above.</p>}
      {w !== null && open && schedule.rollout === null && (
        <EditText
          env={env}
          schedule={w.schedule}
          onSaved={() => {
            setTick((n) => n + 1);
            onEdited();
          }}
        />
      )}
    </section>
  );
}

function Earlier({ earlier }: { earlier: readonly ChangeRef[] }): preact.JSX.Element {
  if (earlier.length === 0) return <p class="muted">No pending change of its items comes before it: just before its time is as now.</p>;
  return (
    <div>
      <p>Just before its time, after the earlier pending changes:</p>
      <ul aria-label="Earlier pending changes folded in">
        {earlier.map((c) => (
          <li key={c.id}>
            <code>{c.id}</code> at <time dateTime={c.at}>{when(c.at)}</time>
            {c.note !== '' && <span> ({c.note})</span>}
            {c.error !== null && <span class="error-text"> — would fail, skipped: {c.error.message}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

function mappingText(state: ItemState | null): string {
  return state === null || state.mapping === null ? '' : JSON.stringify(state.mapping, null, 2) + '\n';
}

/** One item: the text and the mapping after the change, each diffed against the base chosen. */
function ItemDiff({ item, base, failing, settled }: { item: ItemWrites; base: Base; failing: boolean; settled: boolean }): preact.JSX.Element {
  const from = base === 'now' ? item.now : item.before;
  const name = `${item.id} in ${item.env}`;
  if (settled || failing) {
    return (
      <section aria-label={`${name} now`}>
        <h5>{name} now</h5>
        {item.now === null ? <p class="muted">{item.id} does not exist now.</p> : <pre tabIndex={0}>{item.now.text}</pre>}
      </section>
    );
  }
  const to = item.after;
  const label = `against ${BASES[base]}`;
  return (
    <section aria-label={`What it writes to ${name}`}>
      <h5>
        {name}: {describeRevision(from, to)}
      </h5>
      {to === null ? (
        <p>It deletes {item.id}.</p>
      ) : (from?.text ?? '') === to.text ? (
        <p class="muted">The text stays as it is {base === 'now' ? 'now' : 'just before its time'}.</p>
      ) : (
        <Diff before={from?.text ?? ''} after={to.text} label={`Text of ${item.id} ${label}`} />
      )}
      {mappingText(from) !== mappingText(to) && <Diff before={mappingText(from)} after={mappingText(to)} label={`Mapping of ${item.id} ${label}`} />}
    </section>
  );
}

function describeRevision(from: ItemState | null, to: ItemState | null): string {
  if (to === null) return 'deleted';
  if (from === null) return `created (revision ${to.revision})`;
  return to.revision === from.revision ? `revision ${to.revision} kept` : `revision ${from.revision} → ${to.revision}`;
}

/** The texts of the change's content puts, edited and saved through PUT .../ops (the other ops kept as they are). */
function EditText({ env, schedule, onSaved }: { env: string; schedule: Schedule; onSaved: () => void }): preact.JSX.Element | null {
  const puts = schedule.ops.map((op, i) => ({ op, i })).filter(({ op }) => op.op === 'content.put' && typeof op.text === 'string');
  const [editing, setEditing] = useState(false);
  const [texts, setTexts] = useState<Record<number, string>>({});
  const outcome = useOutcome();
  const gate = useConflictGate();
  if (puts.length === 0) return null;

  async function save(): Promise<void> {
    const ops = schedule.ops.map((op, i) => (texts[i] === undefined ? op : { ...op, text: texts[i] }));
    await gate.guard(env, { ops, schedule: schedule.id }, `Saving this text of ${schedule.id}`, async () => {
      await outcome.attempt(async () => {
        await editChangeOps(env, schedule.id, ops);
        setEditing(false);
        setTexts({});
        onSaved();
        return `Saved the new text of ${schedule.id}; it still takes effect at ${when(schedule.at)}.`;
      });
    });
  }

  if (!editing) {
    return (
      <div class="row">
        <button type="button" onClick={() => setEditing(true)} aria-label={`Edit the text of ${schedule.id}`}>
          Edit its text
        </button>
        <OutcomeLines outcome={outcome} />
      </div>
    );
  }
  const errorId = `edit-error-${schedule.id}`;
  return (
    <div>
      {puts.map(({ op, i }) => (
        <Editor
          key={i}
          label={puts.length === 1 ? `Text of ${schedule.id}` : `Text of ${String(op.id)} in ${schedule.id}`}
          initial={op.text as string}
          resetKey={`${schedule.id}/${i}`}
          onChange={(t) => setTexts((prev) => ({ ...prev, [i]: t }))}
          check={jsoncDiagnostics}
        />
      ))}
      <FieldError id={errorId} form="change" field="text" error={outcome.error} />
      {gate.warning}
      <div class="row">
        <button type="button" onClick={() => void save()}>
          Save the new text
        </button>
        <button type="button" onClick={() => setEditing(false)}>
          Keep the text as it is
        </button>
      </div>
      <OutcomeLines outcome={{ ...outcome, error: unplaced('change', outcome.error) }} />
    </div>
  );
}

/**
 * The warning before a write that would make pending scheduled changes fail later (a change pinned
 * to the revision a save replaces, an item a delete removes, a patch the new text no longer takes):
 * the server is asked first (POST .../schedules/check, nothing written), and when it names
 * conflicts the write waits for the editor's choice, go ahead or not, with the changes named.
 */
import { useState } from 'preact/hooks';
import { checkConflicts, type ChangeRef, type ProposedWrite } from '../changes-api.js';
import { when } from './when.js';

interface Held {
  readonly what: string;
  readonly conflicts: readonly ChangeRef[];
  readonly go: () => Promise<void>;
}

export interface ConflictGate {
  /**
   * Checks `write`; runs `go` at once when it makes no pending change fail (or when the check
   * cannot say: the write itself then answers), else holds it behind the warning. `what` names
   * the write in the warning ("Saving Shop", "Scheduling this change").
   */
  guard: (env: string, write: ProposedWrite, what: string, go: () => Promise<void>) => Promise<void>;
  /** The warning while a write is held, else null. */
  warning: preact.JSX.Element | null;
}

export function useConflictGate(): ConflictGate {
  const [held, setHeld] = useState<Held | null>(null);

  async function guard(env: string, write: ProposedWrite, what: string, go: () => Promise<void>): Promise<void> {
    let conflicts: readonly ChangeRef[] = [];
    try {
      const check = await checkConflicts(env, write);
      if (check.refused === null) conflicts = check.conflicts;
    } catch {
      // A write the check refuses is refused by the write too, which shows why beside its field.
    }
    if (conflicts.length === 0) {
      setHeld(null);
      await go();
      return;
    }
    setHeld({ what, conflicts, go });
  }

  const warning =
    held === null ? null : (
      <div role="alertdialog" aria-labelledby="conflict-question" class="confirm conflict">
        <p id="conflict-question">
          {held.what} would make {held.conflicts.length === 1 ? 'a scheduled change' : `${held.conflicts.length} scheduled changes`} fail at {held.conflicts.length === 1 ? 'its' : 'their'} time:
        </p>
        <ul aria-label="Scheduled changes that would fail">
          {held.conflicts.map((c) => (
            <li key={c.id}>
              <code>{c.id}</code> at <time dateTime={c.at}>{when(c.at)}</time>
              {c.note !== '' && <span> ({c.note})</span>}: {c.error?.message ?? ''} <span class="muted">({c.error?.code ?? ''})</span>
            </li>
          ))}
        </ul>
        <button
          type="button"
          onClick={() => {
            const go = held.go;
            setHeld(null);
            void go();
          }}
          autoFocus
        >
          Go ahead anyway
        </button>
        <button type="button" onClick={() => setHeld(null)}>
          Don't, keep the scheduled changes working
        </button>
      </div>
    );
  return { guard, warning };
}

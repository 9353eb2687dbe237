/**
 * The confirmation every live write of the console asks first: a question naming what changes, an
 * optional comment for the audit log (sent as X-Rcd-Comment, shown in the Audit log screen), and
 * the buttons that go ahead or back out. One question at a time per place that asks.
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/** The audit log keeps at most this many characters of a comment (src/admin/server/audit-comment.ts). */
export const MAX_COMMENT = 500;

export interface Question {
  /** What changes, in words: "Save content Shop in live as a new revision?" */
  readonly question: string;
  /** The button that goes ahead: "Yes, save". */
  readonly yes: string;
  /** The write, given the comment (empty when none). */
  readonly run: (comment: string) => Promise<unknown>;
}

export interface Asking {
  ask: (q: Question) => void;
  /** The dialog while a question is open, else null: rendered where the action is. */
  dialog: preact.JSX.Element | null;
}

let counter = 0;

export function useConfirmWrite(): Asking {
  const [open, setOpen] = useState<Question | null>(null);
  const [comment, setComment] = useState('');
  const [busy, setBusy] = useState(false);
  const [id] = useState(() => `confirm-write-${++counter}`);
  function ask(q: Question): void {
    setComment('');
    setOpen(q);
  }
  async function go(q: Question): Promise<void> {
    setBusy(true);
    try {
      await q.run(comment);
    } finally {
      setBusy(false);
      setOpen(null);
    }
  }
  const dialog =
    open === null ? null : (
      <div role="alertdialog" aria-labelledby={id} class="confirm">
        <p id={id}>{open.question}</p>
        <label>
          Comment for the audit log (optional){' '}
          <input value={comment} maxLength={MAX_COMMENT} onInput={(e) => setComment(e.currentTarget.value)} placeholder="why, e.g. hotfix for ticket 123" />
        </label>
        <div class="row">
          <button type="button" onClick={() => void go(open)} disabled={busy} autoFocus>
            {open.yes}
          </button>
          <button type="button" onClick={() => setOpen(null)} disabled={busy}>
            Go back
          </button>
        </div>
      </div>
    );
  return { ask, dialog };
}

/** A button whose click asks `question` through `confirm` (the write runs once the user says yes). */
export function ConfirmButton({ confirm, question, label, children }: { confirm: Asking; question: Question; label?: string; children: ComponentChildren }): preact.JSX.Element {
  return (
    <button type="button" onClick={() => confirm.ask(question)} aria-label={label}>
      {children}
    </button>
  );
}

/** A table row's Delete button, named "Delete <what>" for assistive technology, asking first. */
export function DeleteButton({ confirm, question, what }: { confirm: Asking; question: Question; what: string }): preact.JSX.Element {
  return (
    <ConfirmButton confirm={confirm} question={question} label={`Delete ${what}`}>
      Delete
    </ConfirmButton>
  );
}

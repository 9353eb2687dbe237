/**
 * Beside a preview at a time: the pending changes the server folded in to get there (in their
 * order; one that would fail is named as skipped), and a line diff of the answer then against the
 * answer the same user gets now.
 */
import type { PreviewAt } from '../changes-api.js';
import { Diff } from './diff.js';
import { when } from './when.js';

function pretty(answer: unknown): string {
  return JSON.stringify(answer, null, 2) + '\n';
}

export function PreviewChanges({ preview }: { preview: PreviewAt }): preact.JSX.Element {
  const changes = preview.changes ?? [];
  const now = preview.now ?? null;
  return (
    <div>
      {changes.length === 0 ? (
        <p class="muted">No pending change of this item is due by then: it answers as now.</p>
      ) : (
        <>
          <p>
            {changes.length === 1 ? 'One pending change' : `${changes.length} pending changes`} folded in, in the order they apply:
          </p>
          <ul aria-label="Pending changes folded in">
            {changes.map((c) => (
              <li key={c.id}>
                <code>{c.id}</code> at <time dateTime={c.at}>{when(c.at)}</time> ({c.ops.join(', ')}
                {c.note === '' ? '' : `: ${c.note}`})
                {c.error !== null && <span class="error-text"> — would fail at its time and is skipped: {c.error.message}</span>}
              </li>
            ))}
          </ul>
        </>
      )}
      {now === null ? (
        <p class="muted">Nothing answers this user now (the item does not exist, or no revision serves the app version).</p>
      ) : pretty(now.answer) === pretty(preview.answer) ? (
        <p class="muted">The answer is the same as now.</p>
      ) : (
        <Diff before={pretty(now.answer)} after={pretty(preview.answer)} label="Answer then against the answer now" />
      )}
    </div>
  );
}

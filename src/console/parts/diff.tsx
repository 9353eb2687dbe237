/** A line diff of two texts (old first), added and removed lines marked for eyes and for screen readers. */
import { diffLines } from 'diff';

export function Diff({ before, after, label }: { before: string; after: string; label: string }): preact.JSX.Element {
  const parts = diffLines(before, after);
  const rows: preact.JSX.Element[] = [];
  let n = 0;
  for (const part of parts) {
    const kind = part.added ? 'add' : part.removed ? 'del' : 'same';
    const sign = part.added ? '+' : part.removed ? '-' : ' ';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const line of lines) {
      rows.push(
        <div key={n++} class={`diff-${kind}`}>
          <span class="sign" aria-label={kind === 'add' ? 'added' : kind === 'del' ? 'removed' : undefined}>
            {sign}
          </span>
          {line}
        </div>,
      );
    }
  }
  return (
    <pre class="diff" role="region" aria-label={label} tabIndex={0}>
      {rows}
    </pre>
  );
}

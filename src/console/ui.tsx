/** Small pieces every screen uses: loading data, showing an API error, confirming, diffs. */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { diffLines } from 'diff';
import { ApiError } from './api.js';

export interface Loaded<T> {
  data: T | null;
  error: unknown;
  reload: () => void;
}

/** Runs `load` on mount and whenever `deps` change or reload() is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (d) => {
        if (!live) return;
        setData(d);
        setError(null);
      },
      (e: unknown) => {
        if (live) setError(e);
      },
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, reload };
}

export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code}, ${err.status})`;
  return err instanceof Error ? err.message : String(err);
}

/** An error as an alert: screen readers announce it when it appears. */
export function ErrorBox({ error }: { error: unknown }): preact.JSX.Element | null {
  if (error === null || error === undefined) return null;
  const details = error instanceof ApiError && Array.isArray(error.details) ? (error.details as { path?: string; reason?: string }[]) : [];
  return (
    <div role="alert" class="error">
      <p>{describeError(error)}</p>
      {details.length > 0 && (
        <ul>
          {details.map((d, i) => (
            <li key={i}>
              {d.path ?? ''}: {d.reason ?? JSON.stringify(d)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export function Status({ children }: { children: ComponentChildren }): preact.JSX.Element {
  return (
    <p role="status" class="status">
      {children}
    </p>
  );
}

/** A line diff of two texts (old first), added and removed lines marked for eyes and for screen readers. */
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

export function when(iso: string | null): string {
  if (iso === null) return '';
  return iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** How the console tells the operator what happened: a status line, and an API error as an alert. */
import type { ComponentChildren } from 'preact';
import { ApiError } from '../api.js';

/** One line for an error: an API error with its stable code and HTTP status, anything else by its message. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.message} (${err.code}, ${err.status})`;
  return err instanceof Error ? err.message : String(err);
}

/** An error as an alert (screen readers announce it when it appears), with the API's per-field details listed. */
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

/** A sentence saying what an action did, as a polite live region. */
export function Status({ children }: { children: ComponentChildren }): preact.JSX.Element {
  return (
    <p role="status" class="status">
      {children}
    </p>
  );
}

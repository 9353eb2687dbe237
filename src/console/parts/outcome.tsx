/**
 * What an operator's action leaves on a screen: the sentence saying what it did and the error it
 * met. attempt() wraps a write, so every screen clears a stale error on success and shows a failure
 * the same way; a write that handles a refusal of its own (the mapping's) sets both itself.
 */
import { useState } from 'preact/hooks';
import { ErrorBox, Status } from './messages.js';

export interface Outcome {
  status: string;
  error: unknown;
  setStatus: (status: string) => void;
  setError: (error: unknown) => void;
  /**
   * Runs `work`. When it succeeds, the sentence it answers (if it answers one) becomes the status
   * and the error clears; when it throws, its error is shown and the status stays. Answers whether
   * `work` succeeded, for the callers that undo something on failure.
   */
  attempt: (work: () => Promise<string | void>) => Promise<boolean>;
}

export function useOutcome(): Outcome {
  const [status, setStatus] = useState('');
  const [error, setError] = useState<unknown>(null);
  async function attempt(work: () => Promise<string | void>): Promise<boolean> {
    try {
      const said = await work();
      if (said !== undefined) setStatus(said);
      setError(null);
      return true;
    } catch (err) {
      setError(err);
      return false;
    }
  }
  return { status, error, setStatus, setError, attempt };
}

/**
 * The status line (when there is one), then the error: the action's own, else `loadError`, the
 * error of loading what the screen shows.
 */
export function OutcomeLines({ outcome, loadError }: { outcome: Outcome; loadError?: unknown }): preact.JSX.Element {
  return (
    <>
      {outcome.status !== '' && <Status>{outcome.status}</Status>}
      <ErrorBox error={outcome.error ?? loadError} />
    </>
  );
}

/** The line that says when a live screen last read its data, and why its last re-read failed. */
import { describeError } from './messages.js';
import { relativeTime } from './experiment-format.js';
import type { LiveLoaded } from './use-live-load.js';
import { when } from './when.js';

/** How often the Experiments pages re-read the readout while they are open. */
export const LIVE_REFRESH_MS = 10_000;

export function LiveStatus({ loaded, now }: { loaded: LiveLoaded<unknown>; now: number }): preact.JSX.Element {
  const every = `re-read every ${LIVE_REFRESH_MS / 1000} s while this page is open`;
  const read = loaded.readAt === null ? null : new Date(loaded.readAt).toISOString();
  return (
    <>
      <p class="muted live-status">
        {read === null ? `Reading…; ${every}.` : <>Last read <time dateTime={read}>{when(read)}</time> ({relativeTime(loaded.readAt!, now)}); {every}.</>}
      </p>
      {loaded.error !== null && (
        <p role="alert" class="error">
          Could not read: {describeError(loaded.error)}
          {read !== null && `. Showing what was read at ${when(read)}.`}
        </p>
      )}
    </>
  );
}

/**
 * The rcd admin console: a single page served by the admin listener at /console/, speaking only to
 * the admin API on the same origin. Screens are chosen by the location hash so every screen has an
 * address (back button, bookmarks) without the server knowing about them.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, storedToken, storeToken } from './api.js';
import { LiveConnection } from './parts/live-connection.js';
import { describeError } from './parts/messages.js';
import { Audit } from './screens/audit.js';
import { Calendar } from './screens/calendar.js';
import { ContentItem } from './screens/content-item.js';
import { ContentList } from './screens/content-list.js';
import { Environments } from './screens/environments.js';
import { ExperimentScreen } from './screens/experiment.js';
import { Experiments } from './screens/experiments.js';
import { Keys } from './screens/keys.js';
import { Promote } from './screens/promote.js';
import { ScheduleScreen } from './screens/schedule.js';
import { Webhooks } from './screens/webhooks.js';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = (): void => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function Screen({ hash }: { hash: string }): preact.JSX.Element {
  const parts = hash.replace(/^#\/?/, '').split('/').map((p) => decodeURIComponent(p));
  if (parts[0] === 'env' && parts[1] !== undefined) {
    if (parts[2] === 'keys') return <Keys env={parts[1]} />;
    if (parts[2] === 'schedule') return <ScheduleScreen env={parts[1]} />;
    if (parts[2] === 'calendar') return <Calendar key={parts[1]} env={parts[1]} />;
    if (parts[2] === 'experiments' && parts[3] !== undefined) return <ExperimentScreen key={`${parts[1]}/${parts[3]}`} env={parts[1]} name={parts[3]} />;
    if (parts[2] === 'experiments') return <Experiments key={parts[1]} env={parts[1]} />;
    if (parts[2] === 'content' && parts[3] !== undefined) return <ContentItem key={`${parts[1]}/${parts[3]}`} env={parts[1]} id={parts[3]} />;
    return <ContentList env={parts[1]} />;
  }
  if (parts[0] === 'calendar') return <Calendar />;
  if (parts[0] === 'promote') return <Promote />;
  if (parts[0] === 'webhooks') return <Webhooks />;
  if (parts[0] === 'audit') return <Audit />;
  return <Environments />;
}

function SignIn({ onSignIn }: { onSignIn: (token: string) => void }): preact.JSX.Element {
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  async function submit(e: Event): Promise<void> {
    e.preventDefault();
    try {
      await api('GET', 'environments', undefined, token.trim());
      onSignIn(token.trim());
    } catch (err) {
      setError(describeError(err));
    }
  }
  return (
    <main class="signin">
      <h1>rcd console</h1>
      <form onSubmit={(e) => void submit(e)}>
        <label>
          Admin token <input type="password" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required autoFocus />
        </label>
        <button type="submit">Sign in</button>
        {error !== '' && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
      <p class="muted">The token is kept for this browser tab only (sessionStorage) and sent to this server's admin API.</p>
      <section class="token-where">
        <h2>Where to find the token</h2>
        <ul>
          <li>
            The server names it when it starts, in the line <code>console at … (sign in with the admin token in …)</code>: the
            variable <code>RCD_ADMIN_TOKEN</code> it was started with, or else the file <code>admin-token</code> in its data
            directory (on the server: <code>cat data/admin-token</code>).
          </li>
          <li>
            Better, a token of your own: an admin makes one with <code>rcd token create YOUR-NAME --role editor</code>. The audit
            log then records your changes under your name instead of <q>console</q>.
          </li>
        </ul>
      </section>
    </main>
  );
}

const NAV: [string, string][] = [
  ['#/environments', 'Environments'],
  ['#/calendar', 'Calendar'],
  ['#/promote', 'Promote'],
  ['#/webhooks', 'Webhooks'],
  ['#/audit', 'Audit log'],
];

function App(): preact.JSX.Element {
  const [token, setToken] = useState(storedToken());
  const hash = useHash();
  if (token === null) {
    return (
      <SignIn
        onSignIn={(t) => {
          storeToken(t);
          setToken(t);
        }}
      />
    );
  }
  return (
    <>
      <header>
        <span class="brand">rcd console</span>
        <nav aria-label="Main">
          {NAV.map(([href, name]) => (
            <a key={href} href={href} aria-current={hash.startsWith(href) || (href === '#/environments' && hash.startsWith('#/env/')) ? 'page' : undefined}>
              {name}
            </a>
          ))}
        </nav>
        <LiveConnection />
        <button
          type="button"
          onClick={() => {
            storeToken(null);
            setToken(null);
          }}
        >
          Sign out
        </button>
      </header>
      <main>
        <Screen hash={hash} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);

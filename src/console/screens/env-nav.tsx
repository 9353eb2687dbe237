/** An environment's own links, on each of its pages: content, keys, schedule, calendar, experiments, promotion. */
import { seg } from '../api.js';

export type EnvPage = 'content' | 'keys' | 'schedule' | 'calendar' | 'experiments';

export function EnvNav({ env, current }: { env: string; current: EnvPage }): preact.JSX.Element {
  const links: [EnvPage | 'promote', string, string][] = [
    ['content', `#/env/${seg(env)}`, 'Content'],
    ['keys', `#/env/${seg(env)}/keys`, 'Keys'],
    ['schedule', `#/env/${seg(env)}/schedule`, 'Schedule'],
    ['calendar', `#/env/${seg(env)}/calendar`, 'Calendar'],
    ['experiments', `#/env/${seg(env)}/experiments`, 'Experiments'],
    ['promote', '#/promote', 'Promotion'],
  ];
  return (
    <nav aria-label={`Environment ${env}`} class="env-nav">
      {links.map(([page, href, name]) => (
        <a key={page} href={href} aria-current={page === current ? 'page' : undefined}>
          {name}
        </a>
      ))}
    </nav>
  );
}

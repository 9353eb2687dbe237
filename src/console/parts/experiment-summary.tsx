/**
 * What the Experiments pages say about one experiment: its facts (item, segment, players, moved
 * players, first and last exposure, the sample ratio check) and its variants' configured and
 * observed shares.
 */
import type { Experiment } from '../experiment-types.js';
import { count, percent, relativeTime, shareOf, srmText } from './experiment-format.js';
import { Table } from './table.js';
import { when } from './when.js';

/** A time relative to now and, after it, in UTC ("5 min ago (2026-11-29 03:04:05Z)"); the browser's own zone on hover. */
export function Moment({ iso, now }: { iso: string | null; now: number }): preact.JSX.Element {
  if (iso === null) return <>none yet</>;
  return (
    <time dateTime={iso} title={new Date(iso).toLocaleString()}>
      {relativeTime(Date.parse(iso), now)} ({when(iso)})
    </time>
  );
}

export function ExperimentFacts({ experiment: e, now }: { experiment: Experiment; now: number }): preact.JSX.Element {
  const items = e.items !== undefined && e.items.length > 0 ? e.items : [e.item];
  return (
    <dl class="facts">
      <dt>{items.length > 1 ? 'Items' : 'Item'}</dt>
      <dd>{items.join(', ')}</dd>
      <dt>Segment</dt>
      <dd>{e.segment}</dd>
      <dt>Players</dt>
      <dd>{count(e.players)}</dd>
      <dt>Moved players</dt>
      <dd>
        {count(e.moved)}
        {e.moved > 0 && ' (seen later with another variant; counted under their first)'}
      </dd>
      <dt>First exposure</dt>
      <dd>
        <Moment iso={e.firstExposure} now={now} />
      </dd>
      <dt>Last exposure</dt>
      <dd>
        <Moment iso={e.lastExposure} now={now} />
      </dd>
      <dt>Sample ratio check</dt>
      <dd>{srmText(e.srm)}</dd>
    </dl>
  );
}

/**
 * Each variant's configured share (its mod range), players and observed share of the players. When
 * the ranges leave mods to nobody, the share of the experiment the ranges give is said too: that is
 * the split the sample ratio check expects.
 */
export function VariantTable({ experiment: e }: { experiment: Experiment }): preact.JSX.Element {
  let total = 0;
  let shares = 0;
  for (const v of e.variants) {
    total += v.players;
    shares += v.share;
  }
  const partial = shares > 0 && shares < 0.9995;
  return (
    <Table caption={`Variants of ${e.name}`} columns={['Variant', 'Configured share', 'Players', 'Observed share']}>
      {e.variants.map((v) => {
        const observed = shareOf(v.players, total);
        return (
          <tr key={v.name}>
            <th scope="row">{v.name}</th>
            <td>
              {percent(v.share)}
              {partial && ` of mods (${percent(v.share / shares)} of the experiment)`}
            </td>
            <td>{count(v.players)}</td>
            <td>{observed === null ? '–' : percent(observed)}</td>
          </tr>
        );
      })}
    </Table>
  );
}

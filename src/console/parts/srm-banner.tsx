/** The sample ratio mismatch of an experiment as a red alert: results read from a skewed split mislead. */
import type { Experiment } from '../experiment-types.js';
import { srmWarning } from './experiment-format.js';

export function SrmBanner({ experiment }: { experiment: Pick<Experiment, 'srm' | 'variants'> }): preact.JSX.Element | null {
  const text = srmWarning(experiment);
  if (text === null) return null;
  return (
    <div role="alert" class="srm-alert">
      <span class="srm-icon" aria-hidden="true">
        !
      </span>
      <p>{text}</p>
    </div>
  );
}

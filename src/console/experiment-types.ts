/**
 * The experiments readout as the admin API answers it (docs/experiments.md, "The readout"):
 * `GET /admin/v1/environments/:env/experiments` and `.../experiments/:name`. Types only, without
 * the DOM, so the Experiments page's pure helpers can be unit-tested in Node.
 */

/** Players first exposed on one UTC day. */
export interface ExperimentDay {
  day: string;
  players: number;
}

export interface ExperimentVariant {
  name: string;
  /** The variant's mod range size / 1000 (the configured share). */
  share: number;
  /** Distinct players whose first exposure was to this variant. */
  players: number;
  days?: ExperimentDay[];
}

/** The sample ratio check: chi-square of the exposed players against the configured shares. */
export interface Srm {
  chiSquare: number;
  pValue: number;
  /** p < 0.001. */
  mismatch: boolean;
}

export interface Experiment {
  name: string;
  /** The first item (in id order) whose mapping carries the experiment. */
  item: string;
  items?: string[];
  segment: string;
  /** The rule is switched off (`"disabled": true` in its mapping). */
  disabled?: boolean;
  variants: ExperimentVariant[];
  players: number;
  /** Players exposed to one variant first and to another later. */
  moved: number;
  /** Null with fewer than two variants or no players. */
  srm: Srm | null;
  firstExposure: string | null;
  /** The newest first exposure. */
  lastExposure: string | null;
}

export interface ExperimentList {
  /** False when the server runs without --exposures: every count is 0. */
  recording: boolean;
  experiments: Experiment[];
}

/** Players first exposed in one hour (its start, ISO), per variant. */
export interface ExperimentHour {
  hour: string;
  variants: Record<string, number>;
}

export interface ExperimentDetail extends Experiment {
  hours: ExperimentHour[];
}

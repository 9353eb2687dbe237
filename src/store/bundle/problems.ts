/**
 * A bundle's problems and the one refusal that lists them: every problem with its JSON Pointer, the
 * message naming the first twenty (a log line stays readable), `details` holding all of them.
 */
import { RcdError } from '../../runtime/errors.js';

export interface BundleProblem {
  /** JSON Pointer (RFC 6901) of the offending value in the bundle; "" is the whole file. */
  readonly path: string;
  readonly reason: string;
}

export function bundleError(problems: readonly BundleProblem[]): RcdError {
  const shown = problems.slice(0, 20).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.reason}`);
  const more = problems.length > shown.length ? `; and ${problems.length - shown.length} more (see details)` : '';
  const noun = problems.length === 1 ? 'problem' : 'problems';
  return new RcdError('invalid_bundle', `invalid bundle, nothing imported (${problems.length} ${noun}): ${shown.join('; ')}${more}`, problems);
}

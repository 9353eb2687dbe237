/**
 * What a content request carries, as the functions that answer it see it (single.ts, combine.ts,
 * content-answer.ts); request.ts's ContentRequest is one. The lifecycle's fields come with
 * DeliveryRequest.
 */
import { MetricRoute } from '../metrics/layout.js';
import type { JobKind } from '../pool/protocol.js';
import type { Rendered } from './front-cache.js';
import type { DeliveryRequest } from './lifecycle.js';
import type { CombineEntry } from './query.js';

/** The content routes, numbered as their metrics labels: a route is its own label (request.ts metricRouteOf). */
export const enum Route {
  Plain = MetricRoute.Config,
  Wrapped = MetricRoute.Dynamic,
  Combine = MetricRoute.Combine,
}

export interface ContentFields extends DeliveryRequest {
  readonly route: Route;
  readonly query: string;
  /** Accept-Encoding as flags (encoding.ts). */
  readonly accept: number;
  /**
   * For a single personalised answer, `tag` is the item's tag, to which the uid belongs (etag.ts
   * wrappedTag): the header block writes the uid's digits after it, and the whole string is built
   * only to compare it with If-None-Match.
   */
  tagUid: boolean;
  kind: JobKind;
  // Combine only: the ids found, in answer order (their keys prepared by the compiled query).
  entries: CombineEntry[] | null;
  rendered: (Rendered | null)[] | null;
  missing: string[] | null;
}

/**
 * `remote-config-delivery/client`: the client SDK (docs/client.md). Browser-safe: nothing here uses a
 * Node-only API; the directory storage adapter for Node is `remote-config-delivery/client/node`.
 */
export { RcdClient, type ItemMeta, type RcdClientOptions, type RefreshListener, type RefreshResult, type UserContext } from './client.js';
export { planBatches } from './sync.js';
export { RcdClientError } from './errors.js';
export { memoryStorage, type ClientStorage } from './storage.js';
export { localStorageStorage, indexedDbStorage } from './browser-storage.js';
export { CLIENT_DEFAULTS_FORMAT, checkClientDefaults, type ClientDefaults, type ClientDefaultsItem } from './defaults.js';
export { backoffDelay, parseRetryAfter, type BackoffOptions } from './backoff.js';
export type { FetchLike } from './http.js';
export type { Segment } from './state.js';
export type { ChangeNotice, StreamMessage } from './stream.js';

/**
 * The admin plane's secrets at start-up: the admin token and, for stores that keep webhooks on disk,
 * the webhook key file. An unusable one stops the start with one line (ConfigError). The main thread
 * reads them before any thread starts, so a refused start loads nothing else, and hands the token to
 * the control thread (ControlInit); the admin state reads the webhook key file again when it opens.
 */
import type { ServeConfig } from '../runtime/config.js';
import { isPostgresUrl } from '../store/url.js';
import { loadSealKey } from './server/sealed.js';
import { resolveAdminToken, type ResolvedAdminToken } from './token.js';

/** The admin token (null with the admin API off), after checking the webhook key file when the store keeps one. */
export function readAdminSecrets(config: ServeConfig): ResolvedAdminToken | null {
  const token = config.adminEnabled ? resolveAdminToken(config.dataDir) : null;
  if (token !== null && (config.storeUrl.startsWith('sqlite:') || isPostgresUrl(config.storeUrl))) loadSealKey(config.dataDir);
  return token;
}

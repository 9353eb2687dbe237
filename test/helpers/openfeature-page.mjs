/* global window, fetch */
// The OpenFeature web SDK with the OFREP web provider, as a page uses them: bundled by esbuild for a
// page of test/e2e/openfeature-web.test.ts (no CDN), driven from the test through window.of. Each
// provider gets its own domain and a fetch that records the status of every exchange, and each
// domain's provider events are recorded, so the test sees what went over the wire and what the
// application was told.
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

const silent = { error() {}, warn() {}, info() {}, debug() {} };
const statuses = new Map();
const events = new Map();

window.of = {
  /** Sets the domain's context and provider; resolves with the provider's status (READY, ERROR, FATAL) and any init error. */
  async init(domain, options, context) {
    statuses.set(domain, []);
    events.set(domain, []);
    const log = statuses.get(domain);
    const fetchImplementation = async (input, init) => {
      const res = await fetch(input, init);
      log.push(res.status);
      return res;
    };
    const client = OpenFeature.getClient(domain);
    for (const type of [ProviderEvents.ConfigurationChanged, ProviderEvents.Stale, ProviderEvents.Error, ProviderEvents.Ready]) {
      client.addHandler(type, (details) => events.get(domain).push({ type, flagsChanged: details?.flagsChanged ?? null }));
    }
    await OpenFeature.setContext(domain, context);
    let error = null;
    try {
      await OpenFeature.setProviderAndWait(domain, new OFREPWebProvider({ fetchImplementation, ...options }, silent));
    } catch (err) {
      error = String(err);
    }
    return { status: client.providerStatus, error };
  },
  details(domain, flag, defaultValue) {
    const client = OpenFeature.getClient(domain);
    switch (typeof defaultValue) {
      case 'boolean':
        return client.getBooleanDetails(flag, defaultValue);
      case 'string':
        return client.getStringDetails(flag, defaultValue);
      case 'number':
        return client.getNumberDetails(flag, defaultValue);
      default:
        return client.getObjectDetails(flag, defaultValue);
    }
  },
  async setContext(domain, context) {
    await OpenFeature.setContext(domain, context);
    return OpenFeature.getClient(domain).providerStatus;
  },
  statuses: (domain) => statuses.get(domain) ?? [],
  events: (domain) => events.get(domain) ?? [],
};

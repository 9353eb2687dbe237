/* global URL, fetch, setTimeout */
// The client SDK's test harness, the same file in Node and in Chromium: it creates RcdClients over
// the SDK module it is given (the compiled package in Node, the esbuild browser bundle in the page)
// with a fetch that records every request the client sends (what, with which tag, the status and
// the body bytes received), so the suite counts real requests in both environments.

/**
 * @param {any} sdk the module `remote-config-delivery/client`
 * @param {(name: string) => any} makeStorage the storage adapter for a cache name
 */
export function createHarness(sdk, makeStorage) {
  const clients = new Map();
  let nextId = 1;

  return {
    /** Creates a client; returns its handle. */
    create(options) {
      const log = [];
      const results = [];
      let burstDone = options.burstBeforeCombine === undefined;
      const counting = async (url, init) => {
        const u = new URL(url);
        const kind = u.pathname.endsWith('/env/catalog') ? 'catalog' : u.pathname.endsWith('/combine') ? 'combine' : u.pathname.endsWith('/env/events') ? 'events' : 'other';
        if (kind === 'combine' && !burstDone) {
          // Overload: one slow render started just before the client's own request holds the
          // server's only job slot (--max-pending 1), so the client's combine is answered 503.
          burstDone = true;
          const b = options.burstBeforeCombine;
          void fetch(b.url, { method: 'POST', headers: { 'x-api-key': b.key, 'content-type': 'application/json', 'accept-encoding': 'gzip' }, body: '{}' }).then((r) => r.arrayBuffer()).catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, b.delayMs));
        }
        const headers = init.headers ?? {};
        const entry = { kind, ids: kind === 'combine' ? JSON.parse(u.searchParams.get('c')) : null, tag: headers['if-none-match'] ?? null, at: Date.now(), status: 0, bytes: 0 };
        log.push(entry);
        let res;
        try {
          res = await fetch(url, init);
        } catch (err) {
          entry.status = -1;
          throw err;
        }
        entry.status = res.status;
        // The change stream's body never ends: it is the client's to read.
        if (kind !== 'events') entry.bytes = (await res.clone().arrayBuffer()).byteLength;
        return res;
      };
      const client = new sdk.RcdClient({
        baseUrl: options.baseUrl,
        apiKey: options.apiKey,
        context: options.context,
        storage: makeStorage(options.storage),
        defaults: options.defaults,
        maxCombineIds: options.maxCombineIds,
        backoff: options.backoff,
        fetch: counting,
      });
      client.onRefresh((r) => results.push(plain(r)));
      const id = nextId++;
      clients.set(id, { client, log, results });
      return id;
    },
    async refresh(id) {
      return plain(await clients.get(id).client.refresh());
    },
    /** Two refresh() calls at once: both promises and the requests they caused. */
    async refreshTwice(id) {
      const c = clients.get(id).client;
      const [a, b] = await Promise.all([c.refresh(), c.refresh()]);
      return [plain(a), plain(b)];
    },
    /** Follows the change stream; the refreshes it causes land in results(). */
    subscribe(id) {
      const entry = clients.get(id);
      entry.client.subscribe(() => undefined);
    },
    values(id, ids) {
      const c = clients.get(id).client;
      return Object.fromEntries(ids.map((k) => [k, { data: c.get(k) ?? null, meta: c.meta(k) ?? null }]));
    },
    log(id) {
      return clients.get(id).log;
    },
    results(id) {
      return clients.get(id).results;
    },
    close(id) {
      clients.get(id).client.close();
      clients.delete(id);
    },
  };
}

function plain(result) {
  const out = { changed: [...result.changed].sort(), fromCache: result.fromCache };
  if (result.error !== undefined) {
    out.error = { code: result.error.code, status: result.error.status, retryAfterMs: result.error.retryAfterMs, retryAt: result.error.retryAt };
  }
  return out;
}

#!/usr/bin/env bash
# `npm run build:code`: the server's compile (tsc, type-checking src, bench and test) and its thread
# bundles, and beside them the browser parts: the console's type check and the client SDK's and the
# console's esbuild bundles. The browser parts read only sources and write only dist/client and
# dist/console, so they run on the core the compile (one thread) leaves idle. Either side failing
# fails the build, after both have finished.
set -uo pipefail
cd "$(dirname "$0")/.."
(tsc -p src/console/tsconfig.json && node scripts/build-client.mjs && node scripts/build-console.mjs) &
browser=$!
tsc -p tsconfig.json && node scripts/bundle-threads.mjs
server=$?
wait "$browser"
browser=$?
if [ "$server" -ne 0 ] || [ "$browser" -ne 0 ]; then exit 1; fi

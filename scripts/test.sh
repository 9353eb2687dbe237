#!/usr/bin/env bash
# `npm test`: builds, lints and runs the fast part of the suite (vitest.config.ts says which files;
# `npm run test:slow` runs the rest). The client's type declarations come first: the compile and the
# lint read them. eslint needs no compiled code, so it runs beside the compile and the type check;
# the tests start only when all three passed, and then do not build again (RCD_TEST_SKIP_BUILD).
# Arguments go to vitest: `npm test -- test/e2e/delivery.test.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run build:types --silent || exit 1
npm run lint:eslint --silent &
eslint=$!
npm run build:code --silent && npm run lint:types --silent
built=$?
wait "$eslint"
linted=$?
if [ "$built" -ne 0 ] || [ "$linted" -ne 0 ]; then exit 1; fi
RCD_TEST_SKIP_BUILD=1 exec vitest run "$@"

#!/usr/bin/env bash
# `npm test`: builds, then runs the fast part of the suite (vitest.config.ts says which files;
# `npm run test:slow` runs the rest) with the lint beside it. The client's type declarations come
# first: the compile and the lint read them. The compile type-checks everything, so a type error
# stops the run before any test. The lint (eslint and the isolatedModules check, `npm run lint`)
# needs no compiled code, so it starts with the compile, on the core the compile (one thread)
# leaves idle, and goes on while the tests run at the lowest CPU priority (nice 19): it takes only
# the CPU the tests leave idle while they wait on sockets, timers and child processes, instead of a
# core the test files and their servers would use. Its report follows the tests'; either failing
# fails the run. Arguments go to vitest: `npm test -- test/e2e/delivery.test.ts`.
set -uo pipefail
cd "$(dirname "$0")/.."
npm run build:types --silent || exit 1
lint_log=$(mktemp)
nice -n 19 npm run lint --silent >"$lint_log" 2>&1 &
lint=$!
trap 'kill "$lint" 2>/dev/null; rm -f "$lint_log"' EXIT
npm run build:code --silent || exit 1
RCD_TEST_SKIP_BUILD=1 vitest run "$@"
tested=$?
wait "$lint"
linted=$?
cat "$lint_log"
if [ "$linted" -ne 0 ]; then echo "npm test: the lint failed (npm run lint)" >&2; fi
if [ "$tested" -ne 0 ] || [ "$linted" -ne 0 ]; then exit 1; fi

#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, makes sure PostgreSQL
# and Kafka answer, type-checks, runs every Vitest project, and prints one closing line
# "N passed, N failed, N skipped". Extra arguments go to vitest (e.g. a file filter).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_pnpm
pnpm install --frozen-lockfile
# .ci/run builds (and lints the build) before it calls this script and says so with
# NOTIFY_BUILT=1; everyone else gets a fresh build here.
if [ "${NOTIFY_BUILT:-}" != 1 ]; then pnpm -s build; fi
ensure_postgres
node scripts/kafka.mjs ensure >/dev/null
pnpm -s typecheck
mkdir -p .cache
status=0
# The whole suite measures coverage and holds the thresholds of vitest.config.ts; a filtered run
# (arguments given) does not.
coverage=()
if [ "$#" -eq 0 ]; then coverage=(--coverage); fi
pnpm -s exec vitest run "${coverage[@]}" --reporter=default --reporter=json --outputFile.json=.cache/vitest-report.json "$@" || status=$?
node scripts/test-summary.mjs .cache/vitest-report.json || status=1
exit $status

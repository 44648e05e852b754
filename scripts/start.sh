#!/usr/bin/env bash
# Starts the whole service on this machine: installs what is missing, builds, makes sure PostgreSQL
# and Kafka answer (starting the bundled broker unless KAFKA_BROKERS is set), applies migrations,
# and runs `notify start` (API + relay + dispatcher) in the foreground. Ctrl-C stops it gracefully.
#
# The last step `exec`s node: the process a supervisor started (systemd, Docker, a PaaS) becomes the
# service itself, so its SIGTERM reaches the service and starts the graceful shutdown.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

ensure_pnpm
pnpm install --frozen-lockfile
pnpm -s build
ensure_postgres
KAFKA_BROKERS="$(node scripts/kafka.mjs ensure | tail -n 1 | sed 's/^KAFKA_BROKERS=//')"
export KAFKA_BROKERS
# A development key so the walkthrough in README.md works out of the box; set your own in production.
export NOTIFY_API_KEYS="${NOTIFY_API_KEYS:-demo:dev-key-change-me}"
# Local webhook receivers (scripts/demo-receiver.mjs) are private addresses the SSRF guard refuses;
# this development start allows loopback unless you say otherwise. Never set this in production.
export NOTIFY_WEBHOOK_ALLOW_CIDRS="${NOTIFY_WEBHOOK_ALLOW_CIDRS-127.0.0.1/32}"
echo "start.sh: development settings: API key 'dev-key-change-me' (tenant demo), webhooks to ${NOTIFY_WEBHOOK_ALLOW_CIDRS:-nowhere private} allowed" >&2
node packages/cli/dist/bin/notify.js migrate
exec node packages/cli/dist/bin/notify.js start "$@"

#!/usr/bin/env bash
# Where enqueue()'s gap to a plain INSERT is: the parts of its transaction measured one by one
# with pgbench (C client, prepared statements, 16 clients), in rounds that alternate the variants,
# each as BEGIN; ...; COMMIT:
#   plain          the enqueue scenario's baseline row (6 columns, primary key only)
#   notif          the notifications row alone, constant values (its indexes and CHECKs)
#   outbox         the outbox row alone (its indexes and triggers)
#   both           both rows in one statement, constant values: what the rows cost
#   one-statement  enqueue's plain path as one SQL statement without plpgsql (validation, id,
#                  instants, message texts, headers, key computed in SQL, as the function does)
#   enq            notify_enqueue_item, as enqueue() calls it
# Then both, one-statement and enq again on a copy of the database without four notification
# indexes that no delivery query reads (tenant_channel, tenant_recipient, tenant_state,
# queued_channel_created: the API's and console's lists, the queue-age gauge).
# Prints transactions per second and the machine's CPU (all processes: pgbench included) per
# transaction, from /proc/stat. Run it on a quiet machine: it measures the whole machine.
#
#   bench/enqueue-parts/run.sh [rounds] [seconds per run]      (after pnpm build: it migrates)
#
# DATABASE_URL names the server (default postgres://postgres@127.0.0.1:5432/postgres); the
# script creates and drops its two databases there.
set -euo pipefail
export PGOPTIONS='-c client_min_messages=warning'
cd "$(dirname "$0")"
ROUNDS=${1:-3}
SECS=${2:-5}
BASE=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
SERVER=${BASE%/*}
A=notify_enqueue_parts
B=notify_enqueue_parts_fewer
command -v pgbench > /dev/null || { echo "pgbench not found (Debian: postgresql-client)" >&2; exit 1; }
psql "$BASE" -qc 'SELECT 1' > /dev/null || { echo "no PostgreSQL at $BASE" >&2; exit 1; }
for db in $A $B; do psql "$BASE" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done
psql "$BASE" -qc "CREATE DATABASE $A"
(cd ../.. && DATABASE_URL="$SERVER/$A" node packages/cli/dist/bin/notify.js migrate > /dev/null)
psql "$SERVER/$A" -qc 'CREATE TABLE bench_plain_insert (id text PRIMARY KEY, tenant_id text NOT NULL, channel text NOT NULL,
  recipient text NOT NULL, body text NOT NULL, created_at timestamptz NOT NULL)'
psql "$BASE" -qc "CREATE DATABASE $B TEMPLATE $A"
psql "$SERVER/$B" -qc 'DROP INDEX notifications_tenant_channel_asc_idx, notifications_tenant_recipient_asc_idx,
  notifications_tenant_state_asc_idx, notifications_queued_channel_created_idx'
trap 'for db in $A $B; do psql "$BASE" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; done' EXIT

run() { # run <label> <database> <script>
  local before after tx tps out
  read -r _ u n s _ < /proc/stat
  before=$((u + n + s))
  out=$(pgbench "$SERVER/$2" -n -M prepared -c 16 -j 2 -T "$SECS" -f "$3.sql" 2>&1)
  read -r _ u n s _ < /proc/stat
  after=$((u + n + s))
  tx=$(awk '/number of transactions actually processed/ {print $NF}' <<< "$out" | cut -d/ -f1)
  tps=$(awk '/^tps/ {printf "%d", $3}' <<< "$out")
  [ -n "$tx" ] && [ "$tx" -gt 0 ] || { echo "$3 on $2 failed:" >&2; echo "$out" >&2; exit 1; }
  # /proc/stat counts USER_HZ (100) ticks: 10,000 µs each.
  printf '%-32s %7s tx/s %6s µs CPU per tx\n' "$1" "$tps" $(((after - before) * 10000 / tx))
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  for v in plain notif outbox both one-statement enq; do run "$v" $A $v; done
  for v in both one-statement enq; do run "$v, 4 fewer indexes" $B $v; done
done

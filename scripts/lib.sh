# Shared by scripts/test.sh, scripts/start.sh and .ci/run. Source it; it defines functions only.

# pnpm, pinned by package.json's packageManager, installed through npm when missing.
ensure_pnpm() {
  if ! command -v pnpm >/dev/null 2>&1; then
    echo "installing pnpm" >&2
    npm install -g --silent "pnpm@$(node -p "require('./package.json').packageManager.split('@')[1]")" >&2
  fi
}

# PostgreSQL: DATABASE_URL if set; else the local server on 127.0.0.1:5432, started with the
# Debian cluster tools when it is installed but not running. Fails with one clear line.
ensure_postgres() {
  local url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/notify}"
  if node scripts/pg-ping.mjs "$url" 2>/dev/null; then return 0; fi
  if [ -z "${DATABASE_URL:-}" ] && command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting the local PostgreSQL cluster" >&2
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start >&2 || true
    for _ in $(seq 1 30); do node scripts/pg-ping.mjs "$url" 2>/dev/null && return 0; sleep 0.5; done
  fi
  node scripts/pg-ping.mjs "$url" # prints the reason
}

#!/usr/bin/env bash
# The main job with data flowing: starts the daemon on stream EVENTS and a load generator that
# publishes a realistic mix of catalogue events at 200/s. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
cargo build --release --quiet
BIN=target/release/event-audit
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/event_audit}
"$BIN" publish --count "${DEMO_EVENTS:-1000000}" --rate "${DEMO_RATE:-200}" --subject events.demo &
PUB=$!
trap 'kill $PUB 2>/dev/null || true' EXIT INT TERM
echo "daemon: http://127.0.0.1:9187/metrics   audit log: psql $DATABASE_URL -c 'select status, count(*) from event_log group by 1'"
"$BIN" run

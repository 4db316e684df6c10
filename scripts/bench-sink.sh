#!/usr/bin/env bash
# The database side of ingest alone, without the bus or decoding: the same N rows of the mix
# (1) COPYed into audit.events, one transaction per batch (the database ceiling), and (2) written
# through the daemon's sink by one writer (rows, envelope-id claims, drift observations, chain
# link, one transaction per batch). Prints both rates and, from the sink's trace of each batch,
# the time of each step summed over the batches, as a share of the COPY step.
# Usage: scripts/bench-sink.sh [N]   (default 300000; BIN=another build, BATCH=2000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-300000}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
BIN=${BIN:-target/release/event-audit}
DB="ea_bench_sink_$$"
LOG=$(mktemp)
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
cleanup() {
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -f "$LOG"
}
trap cleanup EXIT
"$BIN" bench copy --database-url "$PG/$DB" -n "$N" --batch-size "$BATCH" 2>/dev/null
psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB"
RUST_LOG=event_audit::ingest::sink=trace "$BIN" --log-json bench copy --database-url "$PG/$DB" \
    -n "$N" --batch-size "$BATCH" --through-sink 2> "$LOG"
read -r _ _ _ ids copy obs link < <(python3 scripts/batch_timings.py "$LOG")
python3 - "$ids" "$copy" "$obs" "$link" <<'PY'
import sys
ms = dict(zip(("ids", "copy", "observe", "link_commit"), map(int, sys.argv[1:])))
copy = max(ms["copy"], 1)
for step, v in ms.items():
    print(f"{step:>12} {v / 1000:7.2f} s  {v / copy:5.2f} of the COPY step")
PY

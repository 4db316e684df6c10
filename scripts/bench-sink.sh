#!/usr/bin/env bash
# The database side of ingest alone, without the bus or decoding: the same N rows of the mix
#   (0) COPYed into a plain table of the log's columns with its primary key only (the floor any
#       design keeping these rows pays),
#   (1) COPYed into audit.events, one transaction per batch (the database ceiling),
#   (2) written through the daemon's sink by one writer (rows, envelope-id claims, drift
#       observations, chain link, one transaction per batch),
# each into a fresh database, migrated before the clock starts. Prints each one's rate and
# PostgreSQL's CPU seconds per 100,000 rows (the postmaster and its children, from /proc), and,
# from the sink's trace of each batch, the time of each step summed over the batches, as a share
# of the COPY step.
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
PG_PID=$(head -1 "$(psql -tA "$PG/postgres" -c 'show data_directory')/postmaster.pid")
stage() {  # label, extra args of `bench copy`: prints "label rows/s pg_cpu_s_per_100k"
    local label=$1
    shift
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1
    "$BIN" bench copy --database-url "$PG/$DB" -n 0 >/dev/null 2>&1   # create and migrate, untimed
    local pg0 pg1 out
    pg0=$(python3 scripts/pg_cpu.py "$PG_PID")
    out=$(RUST_LOG=event_audit::ingest::sink=trace "$BIN" --log-json bench copy --database-url "$PG/$DB" \
        -n "$N" --batch-size "$BATCH" "$@" 2> "$LOG")
    pg1=$(python3 scripts/pg_cpu.py "$PG_PID")
    read -r _ n _ rate <<< "$out"
    python3 -c "print(f'{\"$label\":>34} {$rate:>9} rows/s  {($pg1 - $pg0) / $n * 1e5:6.3f} PostgreSQL CPU s per 100k rows')"
}
stage "(0) COPY, primary key only" --primary-key-only
stage "(1) COPY into audit.events" 
stage "(2) through the sink" --through-sink
read -r _ _ _ ids copy obs link < <(python3 scripts/batch_timings.py "$LOG")
python3 - "$ids" "$copy" "$obs" "$link" <<'PY'
import sys
ms = dict(zip(("ids", "copy", "observe", "link_commit"), map(int, sys.argv[1:])))
copy = max(ms["copy"], 1)
for step, v in ms.items():
    print(f"{step:>12} {v / 1000:7.2f} s  {v / copy:5.2f} of the COPY step")
PY

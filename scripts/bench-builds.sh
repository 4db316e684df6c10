#!/usr/bin/env bash
# Two builds of event-audit against each other on the database's work per row: the same N
# messages (published once) ingested by one daemon into a fresh database per run (migrated
# before the clock starts), alternating build A and build B for ROUNDS rounds. Per run:
# events/s, PostgreSQL's CPU seconds per 100,000 rows (the postmaster and its children, from
# /proc; by kind of process on stderr), the daemon's (getrusage), and the bytes on disk per
# row of the whole database after the run (tables and indexes, the log's and the claims').
# Prints each run, then the medians and B as a multiple of A.
# Usage: scripts/bench-builds.sh BIN_A BIN_B [N]   (default N=200000; env ROUNDS=3, BATCH=2000)
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1
B=$2
N=${3:-200000}
ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="bb$$"
STREAM="BB_${TAG}"
WORK=$(mktemp -d)
DBS=()
cleanup() {
    "$A" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    for db in "${DBS[@]}"; do
        psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
PG_PID=$(head -1 "$(psql -tA "$PG/postgres" -c 'show data_directory')/postmaster.pid")

# One run: label, binary, run number. Prints "label rows/s pg_cpu_per_100k daemon_cpu_per_100k bytes_per_row".
run_once() {
    local label=$1 bin=$2 db="ea_bb_${TAG}_$3"
    DBS+=("$db")
    "$bin" bench copy --database-url "$PG/$db" -n 0 >/dev/null 2>&1   # create and migrate, untimed
    local pg0 pg1 t0 t1
    pg0=$(python3 scripts/pg_cpu.py "$PG_PID")
    t0=$(date +%s.%N)
    RUST_LOG=warn python3 scripts/child_cpu.py "$WORK/cpu" \
        python3 scripts/pg_cpu.py "$PG_PID" -- \
        "$bin" run --database-url "$PG/$db" --stream "$STREAM" --bind-only --consumer "c$3" \
        --batch-size "$BATCH" --http-addr 127.0.0.1:0 --exit-when-idle 2> "$WORK/log.$3"
    t1=$(date +%s.%N)
    pg1=$(python3 scripts/pg_cpu.py "$PG_PID")
    grep -A12 '^postgres cpu s' "$WORK/log.$3" | sed "s/^/  run $3 ($label) /" >&2
    local rows bytes
    rows=$(psql -tA "$PG/$db" -c "select count(*) from audit.events")
    psql -q "$PG/$db" -c "CHECKPOINT" >/dev/null
    bytes=$(psql -tA "$PG/$db" -c "select pg_database_size(current_database())")
    empty=$(psql -tA "$PG/postgres" -c "select pg_database_size('template1')")
    python3 -c "
rows, wall, pg, d, b = $rows, $t1 - $t0, $pg1 - $pg0, $(cat "$WORK/cpu"), $bytes - $empty
print('$label', f'{rows / wall:.0f}', f'{pg / rows * 1e5:.3f}', f'{d / rows * 1e5:.3f}', f'{b / rows:.1f}')"
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
}

echo "publishing $N messages to $STREAM ..." >&2
"$A" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1 >&2
results="$WORK/results"
i=0
for r in $(seq "$ROUNDS"); do
    for label in A B; do
        i=$((i + 1))
        bin=$A; [ "$label" = B ] && bin=$B
        run_once "$label" "$bin" "$i" | tee -a "$results" | sed "s/^/round $r: build /"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for b in ("A", "B"):
    rs = [r for r in runs if r[0] == b]
    med[b] = [statistics.median(float(r[k]) for r in rs) for k in range(1, 5)]
print("medians     events/s   PostgreSQL CPU s/100k   daemon CPU s/100k   bytes/row (database)")
for b in ("A", "B"):
    m = med[b]
    print(f"build {b}   {m[0]:9.0f}   {m[1]:21.3f}   {m[2]:17.3f}   {m[3]:9.1f}")
print("B / A       " + "   ".join(f"{med['B'][k] / med['A'][k]:.3f}" for k in range(4)))
PY

#!/usr/bin/env bash
# What row encoding 3 (the salted commitment that lets a row's personal data be erased) costs
# ingest against encoding 2, with one binary: a development build writes encoding 2 when
# EVENT_AUDIT_DEV_ROW_ENCODING=2. The same N messages (published once) are ingested into a fresh
# database per run, alternating 2 and 3 for ROUNDS rounds. Per run: events/s, PostgreSQL's CPU
# seconds (the postmaster and its children, from /proc) and the daemon's (getrusage), and the
# log's bytes on disk per row. Prints each run, then the medians and 3 as a multiple of 2.
# Usage: scripts/bench-encoding.sh [N]   (default N=200000; env ROUNDS=3, BATCH=2000, BIN=a
# development build already made)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-200000}}
ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
TAG="enc$$"
STREAM="ENC_${TAG}"
WORK=$(mktemp -d)
DBS=()
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    for db in "${DBS[@]}"; do
        psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
PG_PID=$(head -1 "$(psql -tA "$PG/postgres" -c 'show data_directory')/postmaster.pid")

# One run: encoding, run number. Prints "encoding rows/s pg_cpu_per_100k daemon_cpu_per_100k bytes_per_row".
run_once() {
    local enc=$1 db="ea_enc_${TAG}_$2"
    DBS+=("$db")
    local pg0 pg1 t0 t1
    pg0=$(python3 scripts/pg_cpu.py "$PG_PID")
    t0=$(date +%s.%N)
    EVENT_AUDIT_DEV_ROW_ENCODING=$enc RUST_LOG=warn python3 scripts/child_cpu.py "$WORK/cpu" \
        "$BIN" run --database-url "$PG/$db" --stream "$STREAM" --bind-only --consumer "c$2" \
        --batch-size "$BATCH" --http-addr 127.0.0.1:0 --exit-when-idle 2> "$WORK/log.$2"
    t1=$(date +%s.%N)
    pg1=$(python3 scripts/pg_cpu.py "$PG_PID")
    local rows bytes v
    rows=$(psql -tA "$PG/$db" -c "select count(*) from audit.events")
    v=$(psql -tA "$PG/$db" -c "select count(*) from audit.events where (commitment is not null) = ($enc = 3)")
    [ "$v" = "$rows" ] || { echo "run $2: not every row is in encoding $enc ($v of $rows)" >&2; exit 1; }
    bytes=$(psql -tA "$PG/$db" -c "select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = 'audit.events'::regclass")
    python3 -c "
rows, wall, pg, d, b = $rows, $t1 - $t0, $pg1 - $pg0, $(cat "$WORK/cpu"), $bytes
print($enc, f'{rows / wall:.0f}', f'{pg / rows * 1e5:.3f}', f'{d / rows * 1e5:.3f}', f'{b / rows:.1f}')"
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
}

echo "publishing $N messages to $STREAM ..." >&2
"$BIN" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1 >&2
results="$WORK/results"
i=0
for r in $(seq "$ROUNDS"); do
    for enc in 2 3; do
        i=$((i + 1))
        run_once "$enc" "$i" | tee -a "$results" | sed "s/^/round $r: encoding /"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if l.strip()]
med = {}
for enc in ("2", "3"):
    rs = [r for r in runs if r[0] == enc]
    med[enc] = [statistics.median(float(r[k]) for r in rs) for k in range(1, 5)]
print("medians        events/s   PostgreSQL CPU s/100k   daemon CPU s/100k   bytes/row")
for enc in ("2", "3"):
    m = med[enc]
    print(f"encoding {enc}    {m[0]:9.0f}   {m[1]:21.3f}   {m[2]:17.3f}   {m[3]:9.1f}")
print("3 / 2          " + "   ".join(f"{med['3'][k] / med['2'][k]:.3f}" for k in range(4)))
PY

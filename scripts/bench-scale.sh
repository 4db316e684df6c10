#!/usr/bin/env bash
# Scale-out on one machine: the same N messages ingested by 1, 2 and 3 daemons sharing one durable
# consumer (each with its own --instance), each run into a fresh database. Prints, per run, the
# wall time from the daemons' start to the last one's exit, events/s, how the rows split between
# instances (from the chain links) and `verify`.
# Usage: scripts/bench-scale.sh [N]   (default N=500000; env BATCH=2000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-500000}}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="s$$"
STREAM="SCALE_${TAG}"
BIN=target/release/event-audit
OUT=$(mktemp -d)
DBS=()

cargo build --release --quiet --features dev
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    for db in "${DBS[@]}"; do
        psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
    done
    rm -rf "$OUT"
}
trap cleanup EXIT

echo "publishing $N messages to $STREAM ..."
"$BIN" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1

printf '\n%-8s %10s %9s %12s  %s\n' "daemons" "messages" "seconds" "events/s" "rows by instance; verify"
for k in 1 2 3; do
    db="ea_scale_${TAG}_${k}"
    DBS+=("$db")
    pids=()
    start=$(date +%s.%N)
    for i in $(seq 1 "$k"); do
        "$BIN" --log-json run --database-url "$PG/$db" --stream "$STREAM" --bind-only \
            --consumer "run$k" --instance "d$i" --batch-size "$BATCH" --http-addr 127.0.0.1:0 \
            --exit-when-idle 2> "$OUT/log.$k.$i" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    end=$(date +%s.%N)
    rows=$(psql -tA "$PG/$db" -c "select count(*) from audit.events")
    split=$(psql -tA "$PG/$db" -c "select string_agg(instance || '=' || n, ' ' order by instance) from (select instance, sum(row_count) n from audit.chain_links group by 1) s")
    verify=$("$BIN" verify --database-url "$PG/$db" 2>&1 | tail -1)
    secs=$(python3 -c "print(f'{$end - $start:.2f}')")
    rate=$(python3 -c "print(int($rows / ($end - $start)))")
    printf '%-8s %10s %9s %12s  %s; %s\n' "$k" "$rows" "$secs" "$rate" "$split" "$verify"
done

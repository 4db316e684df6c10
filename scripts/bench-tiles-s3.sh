#!/usr/bin/env bash
# The log's tiles in an object store against a directory, in one run on this machine, with the
# S3-compatible server scripts/services.sh starts (s3s-fs on 127.0.0.1:9000, SigV4 checked; a
# bucket is made as s3s-fs keeps one, a directory under its data directory):
#   (1) ingest's cost: the same N events ingested three times into fresh logs at the default
#       checkpoint interval, with no tiles, with --tiles-dir and with --tiles-url (wall time
#       from start to idle, the tiles of every checkpoint written as it is published);
#   (2) the backfill of an existing log of N leaves, into a directory and into the bucket (the
#       daemon's "tiles: backfill done" line: leaves, seconds, leaves/s);
#   (3) a mirror's first pull of the N leaves from the daemon's /log/, into a directory and
#       into the bucket (`mirror --dir s3://...`).
# Usage: scripts/bench-tiles-s3.sh [N]   (default 200000; env BIN=another build, S3=endpoint)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
S3=${S3:-http://127.0.0.1:9000}
S3_DATA=${S3_DATA:-/var/lib/event-audit-s3s}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="s$$"
BUCKET="ea-bench-$TAG"
WORK=$(mktemp -d)
DPID=
STREAMS=()
DBS=()
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null || true
    for s in "${STREAMS[@]}"; do "$BIN" bench delete-stream --stream "$s" >/dev/null 2>&1 || true; done
    for d in "${DBS[@]}"; do psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true; done
    rm -rf "$WORK" "${S3_DATA:?}/$BUCKET"
}
trap cleanup EXIT
mkdir -p "$S3_DATA/$BUCKET"
printf 'event-audit-test' > "$WORK/s3-id"
printf 'event-audit-test-secret' > "$WORK/s3-secret"
chmod 600 "$WORK/s3-id" "$WORK/s3-secret"
cat > "$WORK/settings.toml" <<TOML
[object_store]
endpoint = "$S3"
path_style = true
access_key_id_file = "$WORK/s3-id"
secret_access_key_file = "$WORK/s3-secret"
TOML

seconds() { python3 -c "import time; print(time.monotonic())"; }
field() {  # log message field
    python3 - "$1" "$2" "$3" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        f = json.loads(line).get("fields", {})
    except ValueError:
        continue
    if f.get("message") == sys.argv[2] and sys.argv[3] in f:
        print(f[sys.argv[3]])
PY
}
# A log of its own: a database, a stream holding the N events, a key.
setup() {  # name
    local name=$1
    DBS+=("ea_bench_${TAG}_$name")
    STREAMS+=("BENCH_${TAG}_$name" "BENCH_${TAG}_${name}_CP")
    "$BIN" keygen --out "$WORK/$name" --database-url "$PG/ea_bench_${TAG}_$name" >/dev/null 2>&1
    "$BIN" publish -n "$N" --seed 1 --stream "BENCH_${TAG}_$name" --subjects "${TAG}$name.>" \
        --subject "${TAG}$name.load" >/dev/null 2>&1
}
run() {  # name, extra args...
    local name=$1; shift
    "$BIN" --log-json run --config "$WORK/settings.toml" --database-url "$PG/ea_bench_${TAG}_$name" \
        --stream "BENCH_${TAG}_$name" --bind-only --consumer run --batch-size 2000 \
        --http-addr "${HTTP:-127.0.0.1:0}" ${IDLE---exit-when-idle} \
        --signing-key-file "$WORK/$name.key" --checkpoint-stream "BENCH_${TAG}_${name}_CP" "$@"
}
timed() {  # name, extra args... ; prints seconds
    local t0 t1 name=$1; shift
    t0=$(seconds)
    run "$name" "$@" 2> "$WORK/$name.log"
    t1=$(seconds)
    python3 -c "print(round($t1 - $t0, 2))"
}

echo "(1) ingest of $N events at the default checkpoint interval: no tiles, a directory, the bucket ..."
for n in none dir s3; do setup "$n"; done
t_none=$(timed none)
t_dir=$(timed dir --tiles-dir "$WORK/tiles-ingest")
t_s3=$(timed s3 --tiles-url "s3://$BUCKET/ingest")

echo "(2) backfill of $N leaves: the 'none' log again, into a directory and into the bucket ..."
w_dir=$(timed none --tiles-dir "$WORK/tiles"); cp "$WORK/none.log" "$WORK/bf-dir.log"
w_s3=$(timed none --tiles-url "s3://$BUCKET/backfill"); cp "$WORK/none.log" "$WORK/bf-s3.log"
# The daemon's own line (a backfill of more than 65,536 leaves), else the run's wall time.
bf() {  # log wall
    local s
    s=$(field "$1" "tiles: backfill done" secs)
    s=${s:-$2}
    echo "$N $s $(python3 -c "print(int($N/$s))")"
}
read -r l_dir s_dir r_dir <<< "$(bf "$WORK/bf-dir.log" "$w_dir")"
read -r l_s3 s_s3 r_s3 <<< "$(bf "$WORK/bf-s3.log" "$w_s3")"

echo "(3) a mirror's first pull from /log/, into a directory and into the bucket ..."
PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
HTTP="127.0.0.1:$PORT" IDLE= run none --tiles-dir "$WORK/tiles" 2> "$WORK/serve.log" &
DPID=$!
for _ in $(seq 300); do [ "$(curl -sf "127.0.0.1:$PORT/log/checkpoint" | sed -n 2p)" = "$N" ] && break; sleep 0.2; done
pull() {  # dir ; prints seconds
    local t0 t1
    t0=$(seconds)
    "$BIN" mirror --log-url "http://127.0.0.1:$PORT/log" --public-key "$WORK/none.pub" --dir "$1" \
        --config "$WORK/settings.toml" --max-leaves-per-pull $((N + 1)) >"$WORK/pull.out" 2>&1 \
        || { cat "$WORK/pull.out" >&2; exit 1; }
    t1=$(seconds)
    python3 -c "print(round($t1 - $t0, 2))"
}
p_dir=$(pull "$WORK/mirror")
p_s3=$(pull "s3://$BUCKET/mirror")
kill -TERM "$DPID"; wait "$DPID" || true; DPID=

pct() { python3 -c "print(f'{100 * ($1 - $2) / $2:+.1f}%')"; }
printf '\n%-52s %10s %9s %12s\n' "measurement" "leaves" "seconds" "leaves/s"
printf '%-52s %10s %9s %12s\n' "(1) ingest, no tiles" "$N" "$t_none" "$(python3 -c "print(int($N/$t_none))")"
printf '%-52s %10s %9s %12s\n' "(1) ingest, --tiles-dir ($(pct "$t_dir" "$t_none") time)" "$N" "$t_dir" "$(python3 -c "print(int($N/$t_dir))")"
printf '%-52s %10s %9s %12s\n' "(1) ingest, --tiles-url ($(pct "$t_s3" "$t_dir") vs dir)" "$N" "$t_s3" "$(python3 -c "print(int($N/$t_s3))")"
printf '%-52s %10s %9s %12s\n' "(2) backfill into a directory" "$l_dir" "$(printf %.2f "$s_dir")" "$r_dir"
printf '%-52s %10s %9s %12s\n' "(2) backfill into the bucket" "$l_s3" "$(printf %.2f "$s_s3")" "$r_s3"
printf '%-52s %10s %9s %12s\n' "(3) mirror, first pull into a directory" "$N" "$p_dir" "$(python3 -c "print(int($N/$p_dir))")"
printf '%-52s %10s %9s %12s\n' "(3) mirror, first pull into the bucket" "$N" "$p_s3" "$(python3 -c "print(int($N/$p_s3))")"

#!/usr/bin/env bash
# The log's tiles at scale, in one run on this machine: a log of N rows is ingested with
# checkpoints signed (no tiles), then
#   (1) the backfill: the daemon started again with --tiles-dir writes the whole log's tiles at
#       its first round (its "tiles: backfill done" line gives leaves, seconds and leaves/s);
#   (2) a mirror's first pull of the N leaves (`event-audit mirror`) from the daemon's read path
#       (`GET /log/...` of a running daemon with --tiles-dir);
#   (3) an incremental pull: M more events ingested and tiled by that daemon, then the mirror
#       pulls again.
# Each pull's checks are the mirror's own: the log's signature, every bundle rebuilt into the
# checkpoint's root, every hash tile compared byte for byte.
# Usage: scripts/bench-tiles.sh [N] [M]   (default 1000000 and 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
M=${2:-10000}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="t$$"
STREAM="BENCH_${TAG}"
DB="ea_bench_tiles_${TAG}"
WORK=$(mktemp -d)
DPID=
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null || true
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    "$BIN" bench delete-stream --stream "${STREAM}_CP" >/dev/null 2>&1 || true
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN" keygen --out "$WORK/log" --database-url "$PG/$DB" >/dev/null 2>&1
run() {  # extra args...
    "$BIN" --log-json run --database-url "$PG/$DB" --stream "$STREAM" --bind-only --consumer run \
        --batch-size 2000 --http-addr "${HTTP:-127.0.0.1:0}" ${IDLE---exit-when-idle} \
        --signing-key-file "$WORK/log.key" --checkpoint-interval 5s \
        --checkpoint-stream "${STREAM}_CP" "$@"
}
publish() {  # count seed
    "$BIN" publish -n "$1" --seed "$2" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1
}
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
seconds() { python3 -c "import time; print(time.monotonic())"; }

echo "publishing and ingesting $N events (checkpoints signed, no tiles) ..."
publish "$N" 1
run 2> "$WORK/ingest.log"
echo "(1) backfill: the same log, started with --tiles-dir ..."
run --tiles-dir "$WORK/tiles" 2> "$WORK/backfill.log"
leaves=$(field "$WORK/backfill.log" "tiles: backfill done" leaves)
secs=$(field "$WORK/backfill.log" "tiles: backfill done" secs)
rate=$(field "$WORK/backfill.log" "tiles: backfill done" per_sec)
du_tiles=$(du -sm "$WORK/tiles" | cut -f1)

PORT=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
HTTP="127.0.0.1:$PORT" IDLE= run --tiles-dir "$WORK/tiles" 2> "$WORK/serve.log" &
DPID=$!
served() { curl -sf "127.0.0.1:$PORT/log/checkpoint" | sed -n 2p; }
for _ in $(seq 300); do [ "$(served)" = "$N" ] && break; sleep 0.2; done
pull() {  # prints seconds
    local t0 t1
    t0=$(seconds)
    "$BIN" mirror --log-url "http://127.0.0.1:$PORT/log" --public-key "$WORK/log.pub" --dir "$WORK/mirror" >"$WORK/pull.out" 2>&1 \
        || { cat "$WORK/pull.out" >&2; exit 1; }
    t1=$(seconds)
    python3 -c "print(round($t1 - $t0, 2))"
}
echo "(2) a mirror's first pull ..."
first=$(pull)
echo "(3) $M more events, tiled, and an incremental pull ..."
publish "$M" 2
for _ in $(seq 600); do [ "$(served)" = "$((N + M))" ] && break; sleep 0.2; done
second=$(pull)
kill -TERM "$DPID"; wait "$DPID" || true; DPID=
size=$(sed -n 2p "$WORK/tiles/checkpoint")

printf '\n%-44s %12s %9s %12s\n' "measurement" "leaves" "seconds" "leaves/s"
printf '%-44s %12s %9s %12s\n' "(1) backfill of an existing log" "$leaves" "$(printf %.2f "$secs")" "$rate"
printf '%-44s %12s %9s %12s\n' "(2) mirror, first pull (HTTP, /log/)" "$N" "$first" "$(python3 -c "print(int($N/$first))")"
printf '%-44s %12s %9s %12s\n' "(3) mirror, incremental pull" "$M" "$second" "$(python3 -c "print(int($M/$second))")"
echo "tile directory: ${du_tiles} MB for $leaves leaves; served checkpoint size $size"

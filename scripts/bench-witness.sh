#!/usr/bin/env bash
# What witnessed checkpoints cost ingest, measured back to back on the same machine: the same
# ingest run (scripts/bench-ingest.sh, PEER=0) with checkpoints off, signed (a checkpoint a
# second: the signer's consistency check against its memory, the note stored and published),
# and witnessed (the same, and each checkpoint submitted to a local `witness serve`, with its
# consistency proof, and published only once cosigned), and tiled (signed, and the log written as
# C2SP tlog-tiles to --tiles-dir at each checkpoint), and s3tiled (the same to --tiles-url, a
# bucket of the s3s-fs scripts/services.sh starts, made as s3s-fs keeps one: a directory under
# its data directory). Rounds alternate the modes, so that a
# drift of the machine spreads over all of them. Each run gets fresh keys, a fresh witness state
# and its own checkpoint stream; the witness's cosignature count is printed as proof it served.
# Usage: scripts/bench-witness.sh [N] [ROUNDS]   (default 200000 messages, 2 rounds; MODES="signed tiled"
#        runs only those; CP_INTERVAL=10s signs at the default rate instead of every second;
#        S3=endpoint, S3_DATA=s3s-fs's data directory for s3tiled)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
ROUNDS=${2:-2}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
PORT=${WITNESS_PORT:-19489}
WORK=$(mktemp -d)
WPID=
BUCKET="ea-bench-witness-$$"
S3_DATA=${S3_DATA:-/var/lib/event-audit-s3s}
cleanup() {
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null || true
    rm -rf "$WORK"
    [[ " ${MODES:-} " == *" s3tiled "* ]] && rm -rf "${S3_DATA:?}/$BUCKET"
    true
}
trap cleanup EXIT
if [[ " ${MODES:-} " == *" s3tiled "* ]]; then
    mkdir -p "$S3_DATA/$BUCKET"
    printf 'event-audit-test' > "$WORK/s3-id"
    printf 'event-audit-test-secret' > "$WORK/s3-secret"
    chmod 600 "$WORK/s3-id" "$WORK/s3-secret"
    printf '[object_store]\nendpoint = "%s"\npath_style = true\naccess_key_id_file = "%s"\nsecret_access_key_file = "%s"\n' \
        "${S3:-http://127.0.0.1:9000}" "$WORK/s3-id" "$WORK/s3-secret" > "$WORK/s3.toml"
fi

run_mode() {  # mode round -> prints "mode events/s [cosignatures]"
    local mode=$1 round=$2 d="$WORK/$1-$2" stream="BENCH_CK_$$_$1_$2" args=""
    mkdir -p "$d"
    if [ "$mode" != off ]; then
        "$BIN" keygen --out "$d/log" --database-url "$PG/ea_bench_witness" >/dev/null 2>&1
        args="--signing-key-file $d/log.key --checkpoint-interval ${CP_INTERVAL:-1s} --checkpoint-stream $stream"
    fi
    if [ "$mode" = tiled ]; then
        args="$args --tiles-dir $d/tiles"
    fi
    if [ "$mode" = s3tiled ]; then
        args="$args --tiles-url s3://$BUCKET/$mode-$round --config $WORK/s3.toml"
    fi
    if [ "$mode" = witnessed ]; then
        "$BIN" keygen --witness --name bench.example/w1 --out "$d/w" >/dev/null 2>&1
        "$BIN" witness serve --key "$d/w.key" --log-key "$d/log.pub" --state-dir "$d/ws" \
            --listen "127.0.0.1:$PORT" 2>"$d/witness.log" &
        WPID=$!
        printf 'witness %s http://127.0.0.1:%s\nquorum 1\n' "$(cat "$d/w.pub")" "$PORT" > "$d/policy"
        args="$args --witness-policy $d/policy"
        for _ in $(seq 50); do curl -sf "127.0.0.1:$PORT/metrics" >/dev/null && break; sleep 0.1; done
    fi
    local rate
    rate=$(BIN="$BIN" PEER=0 RUN_ARGS="$args" scripts/bench-ingest.sh "$N" 2>&1 \
        | awk '/^\(3\) event-audit run \(end/ {print $NF}')
    local cosigned=""
    if [ "$mode" = witnessed ]; then
        cosigned=$(curl -sf "127.0.0.1:$PORT/metrics" \
            | awk '/^event_audit_witness_cosignatures_total/ {s += $NF} END {print s + 0}')
        kill "$WPID"; wait "$WPID" 2>/dev/null || true; WPID=
        cosigned=" cosigned=$cosigned"
    fi
    [ "$mode" != off ] && "$BIN" bench delete-stream --stream "$stream" >/dev/null 2>&1 || true
    local tiled=""
    [ "$mode" = tiled ] && tiled=" tiles_size=$(sed -n 2p "$d/tiles/checkpoint" 2>/dev/null || echo none)"
    [ "$mode" = s3tiled ] && tiled=" tiles_size=$(sed -n 2p "$S3_DATA/$BUCKET/$mode-$round/checkpoint" 2>/dev/null || echo none)"
    echo "$mode ${rate:-?}$cosigned$tiled"
}

for round in $(seq "$ROUNDS"); do
    for mode in ${MODES:-off signed tiled witnessed}; do
        run_mode "$mode" "$round"
    done
done | tee "$WORK/results"
python3 - "$WORK/results" <<'PY'
import statistics, sys
rates = {}
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 2 and parts[1] != "?":
        rates.setdefault(parts[0], []).append(float(parts[1]))
off = statistics.median(rates.get("off", [0])) or 1
signed = statistics.median(rates.get("signed", [0])) or 1
tiled = statistics.median(rates.get("tiled", [0])) or 1
for mode in ("off", "signed", "tiled", "s3tiled", "witnessed"):
    if mode in rates:
        m = statistics.median(rates[mode])
        print(f"{mode:10s} median {m:9.0f} events/s  {m / off:.3f} of off  {m / signed:.3f} of signed  {m / tiled:.3f} of tiled")
PY

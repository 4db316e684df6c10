#!/usr/bin/env bash
# The account index's cost, all in one run on this machine:
#   (A) `event-audit run` with checkpoints signed at the default interval (10 s), without the
#       index (--no-account-index): the ceiling the index is measured against;
#   (B) the same N messages into a second database with the index (the default);
# on messages whose account numbers are drawn from ACCOUNTS accounts (default N/20: twenty events
# an account, a migration's shape; ACCOUNTS=0: a new account every message, the worst case). It
# prints events/s of each and (B)/(A); the index's lag when (B) ended (rows recorded but not yet
# indexed: the last round at shutdown has a short budget) and the index brought up to the head
# afterwards as fast as it goes (`bench index-catch-up`: rows indexed a second); its updates and
# labels; and the index's tables on disk per row of the log.
# Then the completeness proof on an index of LABELS accounts (`bench index-proof`: one account
# with EVENTS events, its proof read from the stored index, its size, its check).
# ROUNDS=k repeats (A) and (B) k times in the order A B, B A, A B, ... (each run on a database
# of its own), so that neither always runs second on a machine the other has just warmed or
# loaded (PostgreSQL's checkpoints and autovacuum after a million rows), and prints each pair's
# ratio, their median, and the ratio of the sums.
# Usage: scripts/bench-index.sh [N]   (default N=1000000; env ACCOUNTS, LABELS=1000000,
#        EVENTS=50, ROUNDS=1, BIN=another build, PROOF=0 skips the proof, INGEST=0 skips the
#        ingest runs)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-1000000}}
ACCOUNTS=${ACCOUNTS:-$((N / 20))}
LABELS=${LABELS:-1000000}
EVENTS=${EVENTS:-50}
ROUNDS=${ROUNDS:-1}
SEED=${SEED:-$RANDOM$RANDOM}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="i$$"
STREAM="BENCH_${TAG}"
DB_A="ea_bench_noindex_${TAG}"
DB_B="ea_bench_index_${TAG}"
DB_P="ea_bench_proof_${TAG}"
BIN=${BIN:-target/release/event-audit}
OUT=$(mktemp -d)

[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    for r in $(seq 1 "$ROUNDS"); do
        "$BIN" bench delete-stream --stream "${STREAM}_CPA$r" >/dev/null 2>&1 || true
        "$BIN" bench delete-stream --stream "${STREAM}_CPB$r" >/dev/null 2>&1 || true
        for d in "${DB_A}_$r" "${DB_B}_$r"; do
            psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $d" >/dev/null 2>&1 || true
        done
    done
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB_P" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

if [ "${INGEST:-1}" = 1 ]; then
"$BIN" keygen --out "$OUT/k" --origin "bench.example/index-$TAG" >/dev/null
echo "publishing $N messages to $STREAM, account numbers from $ACCOUNTS accounts ..."
"$BIN" publish -n "$N" --seed "$SEED" --accounts "$ACCOUNTS" --stream "$STREAM" \
    --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1

run_daemon() {  # $1 = database, $2 = consumer, $3 = checkpoint stream, then extra arguments;
                # prints: messages busy_seconds events/s
    local db=$1 consumer=$2 cps=$3
    shift 3
    RUST_LOG=${RUST_LOG:-info,event_audit::witnessed::signer=debug} "$BIN" --log-json run --database-url "$PG/$db" --stream "$STREAM" --bind-only \
        --consumer "$consumer" --http-addr 127.0.0.1:0 --exit-when-idle \
        --signing-key-file "$OUT/k.key" --signer-state "$OUT/$consumer.state" \
        --checkpoint-stream "$cps" "$@" 2> "$OUT/log_$consumer"
    python3 - "$OUT/log_$consumer" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        f = json.loads(line).get("fields", {})
    except ValueError:
        continue
    if f.get("message") == "stopped":
        print(f["messages"], round(f["busy_secs"], 3), int(f["per_busy_sec"]))
PY
}
run_a() {
    echo "(A) round $1: event-audit run, checkpoints every 10 s, --no-account-index ..." >&2
    run_daemon "${DB_A}_$1" "noindex$1" "${STREAM}_CPA$1" --no-account-index
}
run_b() {
    echo "(B) round $1: event-audit run, checkpoints every 10 s, with the account index ..." >&2
    run_daemon "${DB_B}_$1" "index$1" "${STREAM}_CPB$1"
}
ras=() rbs=()
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        read -r na sa ra < <(run_a "$r"); read -r nb sb rb < <(run_b "$r")
    else
        read -r nb sb rb < <(run_b "$r"); read -r na sa ra < <(run_a "$r")
    fi
    echo "  round $r: (A) $ra events/s, (B) $rb events/s, (B)/(A) $(python3 -c "print(f'{$rb/max($ra,1):.2f}')")"
    ras+=("$ra") rbs+=("$rb")
    if [ "$r" = 1 ]; then na1=$na sa1=$sa ra1=$ra nb1=$nb sb1=$sb rb1=$rb; fi
done
na=$na1 sa=$sa1 ra=$ra1 nb=$nb1 sb=$sb1 rb=$rb1
DB_B="${DB_B}_1"
q() { psql -tA "$PG/$DB_B" -c "$1"; }
head=$(q "select tree_size from audit.chain_head")
covered=$(q "select coalesce(max(version), 0) from audit.index_versions")
updates=$(q "select count(*) from audit.index_versions")
echo "bringing the index up to the head ..."
"$BIN" bench index-catch-up --database-url "$PG/$DB_B" --signing-key-file "$OUT/k.key" > "$OUT/catchup"
read -r _ nc sc rc < <(tail -1 "$OUT/catchup")
phases=$(head -1 "$OUT/catchup")
labels=$(q "select labels from audit.index_versions order by version desc limit 1")
index_bytes=$(q "select sum(pg_total_relation_size(c)) from unnest(array['audit.index_versions','audit.index_entries','audit.index_nodes','audit.index_labels']::regclass[]) c")
log_bytes=$(q "select sum(pg_total_relation_size(inhrelid)) from pg_inherits where inhparent = 'audit.events'::regclass")
rows=$(q "select count(*) from audit.events")
verify=$("$BIN" verify --database-url "$PG/$DB_B" --skip-completeness 2>&1 | grep -E "account index|chain" | tr '\n' ' ')

printf '\n%-52s %10s %9s %12s\n' "measurement" "messages" "seconds" "events/s"
printf '%-52s %10s %9s %12s\n' "(A) run, checkpoints at 10 s, no index (round 1)" "$na" "$sa" "$ra"
printf '%-52s %10s %9s %12s\n' "(B) run, checkpoints at 10 s, with the index (round 1)" "$nb" "$sb" "$rb"
echo "ratio (B) / (A) = $(python3 -c "print(f'{$rb/max($ra,1):.2f}')") (accounts: $ACCOUNTS)"
if [ "$ROUNDS" -gt 1 ]; then
    python3 - "${ras[*]}" "${rbs[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
pairs = [y / max(x, 1) for x, y in zip(a, b)]
print(f"{len(a)} rounds (A B, B A, ...): (B)/(A) per round "
      + ", ".join(f"{p:.2f}" for p in pairs)
      + f"; median {statistics.median(pairs):.2f}; ratio of the sums {sum(b) / max(sum(a), 1):.2f}")
PY
fi
echo "when (B) ended: $updates index updates covered $covered of $head leaves (lag $((head - covered)))"
echo "the rest indexed afterwards: $nc rows in $sc s = $rc rows/s (the index alone)"
echo "  $phases"
echo "index: $labels labels; its tables $((index_bytes / 1024 / 1024)) MB, $(python3 -c "print(round($index_bytes/max($rows,1)))") B a row of the log (audit.events: $(python3 -c "print(round($log_bytes/max($rows,1)))") B a row)"
echo "verify: $verify"
echo "(B)'s account index lines:"
grep -E 'account index' "$OUT/log_index1" | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        j = json.loads(line)
    except ValueError:
        continue
    f = j.get("fields", {})
    print(" ", j.get("timestamp", "")[11:19], j.get("level"), f.get("message"), {k: v for k, v in f.items() if k != "message"})
' | head -20
fi

if [ "${PROOF:-1}" = 1 ]; then
echo
echo "completeness proof on an index of $LABELS accounts ..."
"$BIN" bench index-proof --database-url "$PG/$DB_P" --labels "$LABELS" --events "$EVENTS" | grep -v '^index-built'
fi

#!/usr/bin/env bash
# Ingest benchmark, all in one run on this machine, on the same N messages:
#   (1) an ack-only consumer draining the stream          (the bus ceiling)
#   (2) a binary COPY of the same rows into audit.events  (the database ceiling)
#   (2p) the same COPY into a plain table of the log's columns with its primary key only (the
#        floor any design keeping these rows pays; issue "half the database's work per row")
#   (3) `event-audit run` end to end                      (decode, COPY, chain, ack after commit)
#   (4) the peer: a batched Python consumer (nats-py pull batches of 500, json decode, asyncpg COPY
#       in one transaction, then ack), what a team would write instead (scripts/bench_peer.py)
# Prints events/s for each, the ratio of (3) to the lower of (1) and (2), the ratio of (3) to (4),
# and the daemon's peak RSS; and, for each database stage, the server's WAL written per row, the
# checkpoints begun and what the checkpointer wrote while it ran (pg_stat_bgwriter, server-wide),
# the kernel's dirty memory at its start and the disks' writes during it (/proc): a checkpoint or
# a writeback that falls into one stage and not another makes their rates differ. Installs
# nats-py and asyncpg with pip when missing.
# With `--ids repeat`, a replay storm follows in the same run: the same N messages are published
# again with the same seed (every envelope id seen before, same payloads: a publisher replaying
# its outbox), and (3b) is the daemon draining them into the same log, each one a duplicate
# finding; it prints (3b)/(3), the replay's share of the new-id rate.
# With `--poison`, a poison load follows (3): the same N messages published again, each spoiled
# (cut in half, its type renamed, or led by bytes that are not UTF-8: scripts/bench_poison.py),
# and (3c) is the daemon recording them, each a row with its reason; it prints (3c)/(3).
# Usage: scripts/bench-ingest.sh [--ids unique|repeat] [--poison] [N]   (default N=1000000; env BATCH=2000,
#        RUN_ARGS="--writers 3", BIN=another build of event-audit, e.g. one from before a change;
#        PEER=0 skips (4), for comparing two builds back to back)
set -euo pipefail
cd "$(dirname "$0")/.."
IDS=unique
POISON=0
while [ $# -gt 0 ]; do
    case "$1" in
        --ids) IDS=$2; shift 2;;
        --poison) POISON=1; shift;;
        *) break;;
    esac
done
case "$IDS" in unique|repeat) ;; *) echo "--ids unique|repeat, not $IDS" >&2; exit 2;; esac
N=${1:-${N:-1000000}}
SEED=${SEED:-$RANDOM$RANDOM}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="b$$"
STREAM="BENCH_${TAG}"
RUN_DB="ea_bench_run_${TAG}"
COPY_DB="ea_bench_copy_${TAG}"
PEER_DB="ea_bench_peer_${TAG}"
BIN=${BIN:-target/release/event-audit}
OUT=$(mktemp -d)

[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
python3 -c "import nats, asyncpg" 2>/dev/null || python3 -m pip install --quiet nats-py asyncpg
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $RUN_DB" -c "DROP DATABASE IF EXISTS $COPY_DB" \
        -c "DROP DATABASE IF EXISTS $PEER_DB" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

pg_mark() {  # prints: checkpoints begun, buffers the checkpointer wrote, WAL position (bytes),
             # the kernel's dirty kB, and the disks' sectors written and milliseconds spent writing
    psql -tA -F' ' "$PG/postgres" -c "select checkpoints_timed + checkpoints_req, buffers_checkpoint,
        pg_current_wal_lsn() - '0/0' from pg_stat_bgwriter" | tr '\n' ' '
    awk '/^Dirty:/ {printf "%s ", $2}' /proc/meminfo
    awk '$3 ~ /^(sd|vd|xvd|nvme[0-9]+n)[a-z0-9]*$/ && $3 !~ /[0-9]p?[0-9]+$|[a-z][0-9]+$/ {s += $10; t += $11}
         END {print s + 0, t + 0}' /proc/diskstats
}
pg_stage() {  # $1 = stage label, $2 = rows, then the marks before and after: one line for the table
    python3 - "$@" <<'PY'
import sys
label, rows = sys.argv[1:3]
c0, b0, w0, d0, s0, t0, c1, b1, w1, d1, s1, t1 = map(int, sys.argv[3:])
print(f"{label:<6} WAL {(w1 - w0) / max(int(rows), 1):6.0f} B/row   checkpoints begun {c1 - c0}, "
      f"checkpointer wrote {(b1 - b0) * 8 / 1024:6.1f} MB   dirty at start {d0 / 1024:6.1f} MB   "
      f"disk wrote {(s1 - s0) * 512 / 2**20:7.1f} MB in {(t1 - t0) / 1000:6.1f} s of write time")
PY
}
STAGES=""

echo "publishing $N messages to $STREAM ..."
"$BIN" publish -n "$N" --seed "$SEED" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1

echo "(1) ack-only consumer ..."
read -r _ n1 s1 r1 < <("$BIN" bench ack-only --stream "$STREAM" --consumer ackonly --batch-size "$BATCH")
echo "(2) COPY of the same rows ..."
m0=$(pg_mark)
read -r _ n2 s2 r2 < <("$BIN" bench copy --database-url "$PG/$COPY_DB" -n "$N" --batch-size "$BATCH" 2>/dev/null)
STAGES+="$(pg_stage "(2)" "$N" $m0 $(pg_mark))"$'\n'
psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $COPY_DB"   # each stage's database goes once measured (disk)
echo "(2p) COPY of the same rows into a primary-key-only table ..."
m0=$(pg_mark)
read -r _ n2p s2p r2p < <("$BIN" bench copy --primary-key-only --database-url "$PG/$COPY_DB" -n "$N" --batch-size "$BATCH" 2>/dev/null)
STAGES+="$(pg_stage "(2p)" "$N" $m0 $(pg_mark))"$'\n'
psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $COPY_DB"
run_daemon() {  # prints: messages busy_seconds events/s
    /usr/bin/time -v -o "$OUT/time$1" "$BIN" --log-json run --database-url "$PG/$RUN_DB" --stream "$STREAM" \
        --bind-only --consumer run --batch-size "$BATCH" --http-addr 127.0.0.1:0 --exit-when-idle \
        ${RUN_ARGS:-} 2> "$OUT/log$1"
    python3 - "$OUT/log$1" <<'PY'
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
echo "(3) event-audit run ..."
m0=$(pg_mark)
read -r n3 s3 r3 < <(run_daemon "")
STAGES+="$(pg_stage "(3)" "$N" $m0 $(pg_mark))"$'\n'
if [ "$IDS" = repeat ]; then
    echo "replaying the same $N messages (same seed: every id seen before) ..."
    "$BIN" publish -n "$N" --seed "$SEED" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1
    echo "(3b) event-audit run on the replay ..."
    m0=$(pg_mark)
    read -r n3b s3b r3b < <(run_daemon b)
    STAGES+="$(pg_stage "(3b)" "$N" $m0 $(pg_mark))"$'\n'
    dups=$(psql -tA "$PG/$RUN_DB" -c "select count(*) filter (where finding = 'duplicate') || ' duplicate, ' || count(*) filter (where finding = 'conflict') || ' conflict' from audit.id_findings")
fi
if [ "$POISON" = 1 ]; then
    echo "publishing $N poison messages ..."
    python3 scripts/bench_poison.py "$NATS_URL" "$STREAM" "${TAG}.load" "${TAG}.poison" "$N"
    echo "(3c) event-audit run on the poison ..."
    m0=$(pg_mark)
    read -r n3c s3c r3c < <(run_daemon c)
    STAGES+="$(pg_stage "(3c)" "$N" $m0 $(pg_mark))"$'\n'
    verdicts=$(psql -tA "$PG/$RUN_DB" -c "select string_agg(status::text || ' ' || n, ', ' order by status) from (select status, count(*) n from audit.events where subject = '${TAG}.poison' group by status) s")
fi
rows=$(psql -tA "$PG/$RUN_DB" -c "select count(*) from audit.events")
verify=$("$BIN" verify --database-url "$PG/$RUN_DB" 2>&1 | tail -1)
psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $RUN_DB"
if [ "${PEER:-1}" = 0 ]; then
    n4=0; s4=0; r4=0
else
echo "(4) the Python peer ..."
psql -q "$PG/postgres" -c "CREATE DATABASE $PEER_DB"
m0=$(pg_mark)
read -r _ n4 s4 r4 < <(python3 scripts/bench_peer.py "$NATS_URL" "$STREAM" peer "$PG/$PEER_DB" "$N")
STAGES+="$(pg_stage "(4)" "$N" $m0 $(pg_mark))"$'\n'
fi
rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$OUT/time")

ceiling=$(( r1 < r2 ? r1 : r2 ))
ratio=$(python3 -c "print(f'{$r3/$ceiling:.2f}')")
peer_ratio=$(python3 -c "print(f'{$r3/max($r4,1):.2f}')")
printf '\n%-34s %10s %9s %12s\n' "measurement" "messages" "seconds" "events/s"
printf '%-34s %10s %9s %12s\n' "(1) ack-only consumer (bus)" "$n1" "$s1" "$r1"
printf '%-34s %10s %9s %12s\n' "(2) COPY same rows (database)" "$n2" "$s2" "$r2"
printf '%-34s %10s %9s %12s\n' "(2p) COPY, primary key only" "$n2p" "$s2p" "$r2p"
printf '%-34s %10s %9s %12s\n' "(3) event-audit run (end to end)" "$n3" "$s3" "$r3"
if [ "$IDS" = repeat ]; then
    printf '%-34s %10s %9s %12s\n' "(3b) event-audit run, replayed ids" "$n3b" "$s3b" "$r3b"
fi
if [ "${PEER:-1}" = 0 ]; then
    echo "(4) Python peer: skipped (PEER=0)"
else
    printf '%-34s %10s %9s %12s\n' "(4) Python peer (nats-py, asyncpg)" "$n4" "$s4" "$r4"
fi
echo "ratio (3) / min((1),(2)) = $ratio"
echo "ratio (3) / (2p) = $(python3 -c "print(f'{$r3/max($r2p,1):.2f}')")"
[ "${PEER:-1}" = 0 ] || echo "ratio (3) / (4) = $peer_ratio"
if [ "$IDS" = repeat ]; then
    echo "ratio (3b) / (3) = $(python3 -c "print(f'{$r3b/max($r3,1):.2f}')") (replayed ids: $dups findings)"
    echo "ratio (3b) / (2p) = $(python3 -c "print(f'{$r3b/max($r2p,1):.2f}')")"
    [ "${PEER:-1}" = 0 ] || echo "ratio (3b) / (4) = $(python3 -c "print(f'{$r3b/max($r4,1):.2f}')")"
fi
if [ "$POISON" = 1 ]; then
    printf '%-34s %10s %9s %12s\n' "(3c) event-audit run, poison" "$n3c" "$s3c" "$r3c"
    echo "ratio (3c) / (3) = $(python3 -c "print(f'{$r3c/max($r3,1):.2f}')") (the poison's rows: $verdicts)"
fi
echo "daemon peak RSS = $((rss_kb / 1024)) MB"
echo "the server during each database stage (WAL per row; checkpoints):"
printf '%s' "$STAGES"
echo "rows in audit log = $rows; $verify"

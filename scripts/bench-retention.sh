#!/usr/bin/env bash
# Retention benchmark, all in one run on this machine, on the same N rows:
#   (0) loads N messages: `event-audit publish` to a fresh stream, `event-audit run
#       --exit-when-idle` with a signing key, then VACUUM ANALYZE
#   (1) bytes on disk per row, by table (the log's partitions with their indexes, the envelope-id
#       claims and findings, the chain, the tree, the checkpoints), and what a year at
#       100 events/s comes to
#   (2) `erase --account` of an account given 10,000 rows, and `erase --stream S --seq A..B` of
#       10,000 others: seconds each
#   (3) `archive --before <next month>`: rows/s, and the archive's bytes per row
#   (4) `verify --archive` (with the full verify it runs in): seconds
#   (5) `archive --prune`: seconds, and bytes per row after it (the partition swapped for its
#       compact copy; no vacuum needed)
# Usage: scripts/bench-retention.sh [N]   (default N=1000000; env BATCH=2000, BIN=path to use a
# binary already built instead of building the release one)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-1000000}}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="r$$"
STREAM="BENCHR_${TAG}"
CP_STREAM="BENCHR_CP_${TAG}"
DB="ea_bench_retention_${TAG}"
OUT=$(mktemp -d)

if [ -z "${BIN:-}" ]; then
    BIN=target/release/event-audit
    cargo build --release --quiet --features dev
fi
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    "$BIN" bench delete-stream --stream "$CP_STREAM" >/dev/null 2>&1 || true
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.2f}')"; }
rate() { python3 -c "print(f'{$1 / ($3 - $2):,.0f}')"; }

KEY="$OUT/log"
"$BIN" keygen --out "$KEY" --database-url "$PG/$DB" >/dev/null
echo "(0) loading $N rows ..."
"$BIN" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1
"$BIN" run --database-url "$PG/$DB" --stream "$STREAM" --bind-only --consumer run \
    --batch-size "$BATCH" --http-addr 127.0.0.1:0 --exit-when-idle \
    --signing-key-file "$KEY.key" --checkpoint-stream "$CP_STREAM" --checkpoint-dir "$OUT/cp" \
    2> "$OUT/run.log" || { tail -5 "$OUT/run.log"; exit 1; }
psql -q "$PG/$DB" -c "VACUUM ANALYZE" >/dev/null
rows=$(psql -tA "$PG/$DB" -c "select count(*) from audit.events")

sizes() {
    psql -tA -F' ' "$PG/$DB" <<'SQL'
select 'log (audit.events, every partition with its indexes and TOAST)',
       sum(pg_total_relation_size(i.inhrelid)) from pg_inherits i where i.inhparent = 'audit.events'::regclass
union all select 'envelope-id claims (audit.event_claims)', pg_total_relation_size('audit.event_claims')
union all select 'envelope-id findings (audit.id_findings)', pg_total_relation_size('audit.id_findings')
union all select 'chain links (audit.chain_links)', pg_total_relation_size('audit.chain_links')
union all select 'tree nodes (audit.tree_nodes)', pg_total_relation_size('audit.tree_nodes')
union all select 'checkpoints (audit.checkpoints)', pg_total_relation_size('audit.checkpoints')
union all select 'field observations (audit.field_observations)', coalesce(pg_total_relation_size(to_regclass('audit.field_observations')), 0);
SQL
}
report_sizes() {
    local total=0
    while read -r line; do
        bytes=${line##* }
        what=${line% *}
        total=$((total + bytes))
        printf '    %-66s %8.1f bytes/row\n' "$what" "$(python3 -c "print($bytes / $rows)")"
    done < <(sizes)
    printf '    %-66s %8.1f bytes/row; a year at 100 events/s: %s\n' "all" \
        "$(python3 -c "print($total / $rows)")" \
        "$(python3 -c "print(f'{$total / $rows * 100 * 31_536_000 / 1e12:.2f} TB')")"
}
echo "(1) on disk, $rows rows:"
report_sizes

echo "(2) erasure:"
# One account with 10,000 rows spread over the first half of the log (the mix gives each account a few): set
# with the triggers off, as only a benchmark may; erased rows verify without it (a v3 row's
# hash holds through its commitment once its personal columns are gone).
K=$(( rows < 40000 ? rows / 4 : 10000 ))
STEP=$(( rows / 2 / K ))
psql -q "$PG/$DB" -c "SET session_replication_role = replica; UPDATE audit.events SET account_number = 'BENCH-ERASE' \
    WHERE stream = '$STREAM' AND stream_seq % $STEP = 0 AND stream_seq <= $((K * STEP))" >/dev/null
t0=$(now)
"$BIN" erase --database-url "$PG/$DB" --account BENCH-ERASE --reason "bench" > /dev/null
t1=$(now)
echo "    erase --account, $K rows of $rows: $(secs "$t0" "$t1") s"
A=$(( rows / 2 + 1 ))
t0=$(now)
"$BIN" erase --database-url "$PG/$DB" --stream "$STREAM" --seq "$A..$((A + K - 1))" --reason "bench" > /dev/null
t1=$(now)
echo "    erase --stream --seq, $K rows of $rows: $(secs "$t0" "$t1") s"

BEFORE=$(python3 -c "
import datetime as d
n = d.datetime.now(d.timezone.utc)
y, m = (n.year + 1, 1) if n.month == 12 else (n.year, n.month + 1)
print(f'{y:04d}-{m:02d}-01T00:00:00Z')")
echo "(3) archive --before $BEFORE:"
t0=$(now)
"$BIN" archive --database-url "$PG/$DB" --before "$BEFORE" --out "$OUT/archive" > "$OUT/archive.txt"
t1=$(now)
archived=$(python3 -c "import json; print(sum(p['rows'] for p in json.load(open('$OUT/archive/manifest.json'))['partitions']))")
abytes=$(du -cb "$OUT"/archive/*.jsonl | tail -1 | cut -f1)
echo "    $archived rows in $(secs "$t0" "$t1") s: $(rate "$archived" "$t0" "$t1") rows/s; $(python3 -c "print(f'{$abytes / $archived:.0f}')") bytes/row in the archive"

echo "(4) verify --archive (a full verify with it):"
t0=$(now)
"$BIN" verify --database-url "$PG/$DB" --skip-completeness --archive "$OUT/archive" > /dev/null 2> "$OUT/verify.txt" \
    || { cat "$OUT/verify.txt"; exit 1; }
t1=$(now)
echo "    $(secs "$t0" "$t1") s"
t0=$(now)
"$BIN" verify --database-url "$PG/$DB" --skip-completeness > /dev/null 2>&1
t1=$(now)
echo "    (the same verify without --archive: $(secs "$t0" "$t1") s)"

echo "(5) archive --prune:"
t0=$(now)
"$BIN" archive --database-url "$PG/$DB" --before "$BEFORE" --out "$OUT/archive-2" --prune --reason bench > /dev/null
t1=$(now)
echo "    $(secs "$t0" "$t1") s (archived again, then pruned)"
psql -q "$PG/$DB" -c "ANALYZE" >/dev/null
echo "    on disk after the prune:"
report_sizes
claims=$(psql -tA "$PG/$DB" -c "select count(*) from audit.event_claims")
echo "    (the claims table keeps its pages: $claims live claims of $rows rows are left, the space of the deleted ones is reused by new claims after autovacuum)"

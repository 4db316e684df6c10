#!/usr/bin/env bash
# Catalogue-evolution benchmark on N messages of the load mix (this machine, shared: say so with
# the figures):
#   (1) `event-audit run` end to end, with the per-batch drift observations; the share of the
#       batch write spent writing them (the `observe_ms` of the sink's batch timings)
#   (2) `event-audit drift` on the resulting log (table and JSON)
#   (3) `event-audit reprocess --dry-run`, then three stored runs, rows/s each: with the catalogue
#       that judged the log (no verdict changes), and with two fixture catalogues read at run time
#       (`--catalogue-dir`): one where every 10th event version gains a required field (the
#       verdicts of about a tenth of the rows change), one where every event version does (nearly
#       every verdict changes, every changed one stored)
#   (4) `event-audit verify` afterwards (the re-verdicts included)
# Usage: scripts/bench-catalogue.sh [N]   (default N=200000; env BATCH=2000, BIN=another build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-200000}}
BATCH=${BATCH:-2000}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="c$$"
STREAM="BENCHCAT_${TAG}"
DB="ea_bench_cat_${TAG}"
BIN=${BIN:-target/release/event-audit}
OUT=$(mktemp -d)

[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
cleanup() {
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT
secs() { python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1e9:.3f}')" "$1" "$2"; }

echo "publishing $N messages to $STREAM ..."
"$BIN" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1

echo "(1) event-audit run ..."
RUST_LOG="info,event_audit::ingest::sink=trace" "$BIN" --log-json run --database-url "$PG/$DB" \
    --stream "$STREAM" --bind-only --consumer run --batch-size "$BATCH" --http-addr 127.0.0.1:0 \
    --exit-when-idle 2> "$OUT/log"
read -r n1 s1 r1 ids copy obs link < <(python3 scripts/batch_timings.py "$OUT/log")
total=$((ids + copy + obs + link))
observations=$(psql -tA "$PG/$DB" -c "select count(*) from audit.field_observations")

echo "(2) drift ..."
t0=$(date +%s%N); "$BIN" drift --database-url "$PG/$DB" > "$OUT/drift.txt"; t1=$(date +%s%N)
"$BIN" drift --database-url "$PG/$DB" --format json > /dev/null; t2=$(date +%s%N)
d_table=$(secs "$t0" "$t1"); d_json=$(secs "$t1" "$t2")

echo "(3) reprocess ..."
# fixture EVERY: a copy of catalogue/ where every EVERY-th event version gains a required field.
fixture() {
    mkdir -p "$OUT/cat$1"
    cp catalogue/*.toml "$OUT/cat$1/"
    python3 - "$OUT/cat$1/events.toml" "$1" <<'PY'
import sys
path, every = sys.argv[1], int(sys.argv[2])
out, n = [], 0
for line in open(path).read().split("\n"):
    out.append(line)
    if line == "fields = [":
        if n % every == 0:
            out.append(f'  {{ name = "added_in_the_upgrade_{n}", type = "string", required = true }},')
        n += 1
open(path, "w").write("\n".join(out))
PY
}
fixture 10; fixture 1
rows=$(psql -tA "$PG/$DB" -c "select count(*) from audit.events")
stored_run() {  # label, extra args...
    local label=$1; shift
    local before after t0 t1
    before=$(psql -tA "$PG/$DB" -c "select count(*) from audit.reverdicts")
    t0=$(date +%s%N); "$BIN" reprocess --database-url "$PG/$DB" "$@" > "$OUT/run_$label.txt"; t1=$(date +%s%N)
    after=$(psql -tA "$PG/$DB" -c "select count(*) from audit.reverdicts")
    local s; s=$(secs "$t0" "$t1")
    printf '%s %s %s\n' "$s" "$(python3 -c "print(int($rows/$s))")" "$((after - before))"
}
t0=$(date +%s%N); "$BIN" reprocess --database-url "$PG/$DB" --dry-run > "$OUT/dry.txt"; t1=$(date +%s%N)
r_dry=$(secs "$t0" "$t1")
read -r r_same rate_same ch_same < <(stored_run same)
read -r r_tenth rate_tenth ch_tenth < <(stored_run tenth --catalogue-dir "$OUT/cat10")
read -r r_all rate_all ch_all < <(stored_run all --catalogue-dir "$OUT/cat1")

echo "(4) verify ..."
t0=$(date +%s%N); verify=$("$BIN" verify --database-url "$PG/$DB" 2>&1 | tail -1); t1=$(date +%s%N)

printf '\n%-52s %s\n' "measurement" "value"
printf '%-52s %s\n' "(1) run: messages, seconds, events/s" "$n1 $s1 $r1"
printf '%-52s %s\n' "(1) batch writes: total ms / COPY ms / observations ms" "$total / $copy / $obs"
printf '%-52s %s\n' "(1) observation rows written" "$observations"
printf '%-52s %s\n' "(2) drift (table), seconds" "$d_table"
printf '%-52s %s\n' "(2) drift (json), seconds" "$d_json"
printf '%-52s %s\n' "(3) reprocess --dry-run, seconds (rows/s)" "$r_dry ($(python3 -c "print(int($rows/$r_dry))"))"
printf '%-52s %s\n' "(3) stored, same catalogue: s (rows/s), changed" "$r_same ($rate_same), $ch_same"
printf '%-52s %s\n' "(3) stored, 1/10 of versions: s (rows/s), changed" "$r_tenth ($rate_tenth), $ch_tenth"
printf '%-52s %s\n' "(3) stored, every version: s (rows/s), changed" "$r_all ($rate_all), $ch_all"
printf '%-52s %s\n' "(3) rows" "$rows"
printf '%-52s %s\n' "(4) verify, seconds" "$(secs "$t0" "$t1"): $verify"
head -3 "$OUT/run_tenth.txt"

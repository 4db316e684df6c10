#!/usr/bin/env bash
# Verify benchmark, all in one run on this machine, on the same N rows:
#   (0) loads N messages: `event-audit publish` to a fresh stream, `event-audit run --exit-when-idle`
#   (1) the read ceiling: `COPY (SELECT <the columns verify reads>) TO STDOUT (FORMAT binary)` of
#       the same rows, through psql to /dev/null
#   (2) `event-audit verify` (full: every row rehashed, completeness against the stream), rows/s
#       and its time as a multiple of (1) (goal: at most 2x)
#   (2b) the auditor's routine run (`verify --public-key --no-state`: every row rehashed as in (2),
#       and the tree rebuilt from the row hashes the walk reads, against every link, subtree and
#       checkpoint), as a multiple of (2) (goal: at most 1.10x)
#   (3) `--incremental` verify after N more rows, and (4) proof size and generation time, when
#       this binary has them (`verify --help` mentions --incremental; `prove` exists)
# Usage: scripts/bench-verify.sh [N]   (default N=200000; env BATCH=2000, CONNECTIONS=4, BIN=path
# to use a binary already built instead of building the release one)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-200000}}
BATCH=${BATCH:-2000}
CONNECTIONS=${CONNECTIONS:-4}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="v$$"
STREAM="BENCHV_${TAG}"
CP_STREAM="BENCHV_CP_${TAG}"
DB="ea_bench_verify_${TAG}"
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
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }

KEY="$OUT/log"
"$BIN" keygen --out "$KEY" --database-url "$PG/$DB" >/dev/null
WITNESS=(--checkpoint-stream "$CP_STREAM" --checkpoint-dir "$OUT/cp")
load() {
    "$BIN" publish -n "$1" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1
    "$BIN" run --database-url "$PG/$DB" --stream "$STREAM" --bind-only --consumer run \
        --batch-size "$BATCH" --http-addr 127.0.0.1:0 --exit-when-idle \
        --signing-key-file "$KEY.key" "${WITNESS[@]}" 2> "$OUT/run.log" \
        || { tail -5 "$OUT/run.log"; exit 1; }
}

echo "(0) loading $N rows ..."
load "$N"
rows=$(psql -tA "$PG/$DB" -c "select count(*) from audit.events")
psql -q "$PG/$DB" -c "VACUUM ANALYZE" >/dev/null

# The columns verify reads, in its order (src/row/columns.rs), read out without join or order.
COLS=$(psql -tA "$PG/$DB" -c "select string_agg(attname, ', ' order by attnum) from pg_attribute \
    where attrelid = 'audit.events'::regclass and attnum > 0 and not attisdropped")
echo "(1) COPY of the same rows (the read ceiling) ..."
# Once to warm the cache the same way for both, then measured.
psql -q "$PG/$DB" -c "COPY (SELECT $COLS FROM audit.events) TO STDOUT (FORMAT binary)" > /dev/null
t0=$(now)
psql -q "$PG/$DB" -c "COPY (SELECT $COLS FROM audit.events) TO STDOUT (FORMAT binary)" > /dev/null
t1=$(now)
s1=$(secs "$t0" "$t1")

echo "(2) full verify ($CONNECTIONS connections) ..."
t0=$(now)
code=0
"$BIN" verify --database-url "$PG/$DB" --db-connections "$CONNECTIONS" > "$OUT/verify.json" 2> "$OUT/verify.err" || code=$?
t1=$(now)
s2=$(secs "$t0" "$t1")
[ "$code" = 0 ] || { echo "verify exited $code: $(cat "$OUT/verify.err")"; exit 1; }
v_rows=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['rows'])" "$OUT/verify.json")

echo "(2b) the auditor's routine run (verify --public-key: every row, and the witness pass) ..."
t0=$(now)
code=0
"$BIN" verify --database-url "$PG/$DB" --db-connections "$CONNECTIONS" --public-key "$KEY.pub" \
    --no-state "${WITNESS[@]}" > "$OUT/verify_w.json" 2> "$OUT/verify_w.err" || code=$?
t1=$(now)
s2b=$(secs "$t0" "$t1")
[ "$code" = 0 ] || { echo "verify --public-key exited $code: $(tail -3 "$OUT/verify_w.err")"; exit 1; }

r1=$(python3 -c "print(int($rows/$s1))")
r2=$(python3 -c "print(int($v_rows/$s2))")
ratio=$(python3 -c "print(f'{$s2/$s1:.2f}')")

incr="not measured: this binary has no incremental verify (verify --incremental)"
if "$BIN" verify --help 2>/dev/null | grep -q -- "--incremental"; then
    echo "(3) incremental verify after $N more rows ..."
    VARGS=(--database-url "$PG/$DB" --db-connections "$CONNECTIONS" --public-key "$KEY.pub" \
        --state-file "$OUT/state.json" "${WITNESS[@]}")
    "$BIN" verify "${VARGS[@]}" > /dev/null 2>&1 || true   # the checkpoint this verifier checked
    load "$N"
    t0=$(now)
    "$BIN" verify "${VARGS[@]}" --incremental > "$OUT/incr.json" 2> "$OUT/incr.err" || true
    t1=$(now)
    incr="$(secs "$t0" "$t1") s ($(tail -1 "$OUT/incr.err"))"
fi

proof="not measured: this binary has no prove command"
if "$BIN" --help 2>/dev/null | grep -qE '^\s+prove\b'; then
    echo "(4) proof size and generation time ..."
    t0=$(now)
    if "$BIN" prove --database-url "$PG/$DB" --stream "$STREAM" --seq $((N / 2)) --public-key "$KEY.pub" \
        "${WITNESS[@]}" -o "$OUT/bundle.json" 2> "$OUT/prove.err"; then
        t1=$(now)
        proof="$(stat -c %s "$OUT/bundle.json") bytes, $(secs "$t0" "$t1") s (whole process); $(tail -1 "$OUT/prove.err")"
    else
        proof="prove failed: $(tail -1 "$OUT/prove.err")"
    fi
    # An account's events: many rows in one bundle (generation time per row, bytes per row).
    acct=$(psql -tA "$PG/$DB" -c "select account_number from audit.events where account_number \
        is not null group by 1 order by count(*) desc limit 1")
    if [ -n "$acct" ] && "$BIN" prove --database-url "$PG/$DB" --account "$acct" --public-key "$KEY.pub" \
        "${WITNESS[@]}" -o "$OUT/account.json" 2> "$OUT/account.err"; then
        n_acct=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['entries']))" "$OUT/account.json")
        proof_acct="$n_acct rows, $(( $(stat -c %s "$OUT/account.json") / n_acct )) bytes per row; $(tail -1 "$OUT/account.err")"
    else
        proof_acct="prove --account failed: $(tail -1 "$OUT/account.err" 2>/dev/null)"
    fi
fi

printf '\n%-44s %10s %9s %12s\n' "measurement" "rows" "seconds" "rows/s"
printf '%-44s %10s %9s %12s\n' "(1) COPY same columns out (read ceiling)" "$rows" "$s1" "$r1"
printf '%-44s %10s %9s %12s\n' "(2) verify, full ($CONNECTIONS connections)" "$v_rows" "$s2" "$r2"
printf '%-44s %10s %9s %12s\n' "(2b) verify --public-key (the default)" "$v_rows" "$s2b" "$(python3 -c "print(int($v_rows/$s2b))")"
echo "ratio (2) / (1) in time = $ratio (goal: <= 2)"
echo "ratio (2b) / (2) in time = $(python3 -c "print(f'{$s2b/$s2:.2f}')") (the witness pass fed by the walk; goal: <= 1.10)"
echo "(3) incremental verify: $incr"
echo "(4) proof of one row: $proof"
echo "(4) proof of an account's rows: ${proof_acct:-not measured}"
echo "verify: $(tail -1 "$OUT/verify.err")"

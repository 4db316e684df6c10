#!/usr/bin/env bash
# Reconciliation benchmark: the platform simulator plays a batch of N accounts (default 100000)
# with every anomaly at ANOMALY_RATE (default 0.001 each, so the lists leave some accounts
# unsettled), the daemon ingests the events (--exit-when-idle), then `event-audit reconcile`
# is timed against the simulator. Prints the seconds, the REST calls (lists plus only the
# unsettled accounts) and whether every verdict equals the simulator's ground truth.
# Target: under 10 s for 100,000 accounts; above 30 s is not done.
# With BATCH=1 the simulator's manifest is registered as a batch and `reconcile --batch` is
# timed instead: the same verdicts plus the registration follow-through (one more request per
# imported account, and its join-supplier events), whose states are checked too.
# Usage: scripts/bench-reconcile.sh [N]   (env ANOMALY_RATE=0.001, RECONCILE_ARGS="--rest-rate 0", BATCH=1)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-${N:-100000}}
RATE=${ANOMALY_RATE:-0.001}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
TAG="r$$"
STREAM="BENCHREC_${TAG}"
DB="ea_bench_rec_${TAG}"
BIN=target/release/event-audit
OUT=$(mktemp -d)
SIM=""

cargo build --release --quiet --features dev
cleanup() {
    [ -n "$SIM" ] && kill "$SIM" 2>/dev/null && wait "$SIM" 2>/dev/null || true
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true
    rm -rf "$OUT"
}
trap cleanup EXIT

# The token lives in a file only this user can read; it never appears on a command line.
(umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$OUT/token")

ANOMALIES=()
for flag in drop-completion wrong-identifier error-but-created cancelled cancelled-but-imported \
    dry-run duplicate-events late-events left-in-progress left-pending failed missing-in-platform; do
    ANOMALIES+=("--$flag" "$RATE")
done

echo "simulator: playing $N accounts (anomaly rate $RATE each) onto $STREAM ..."
t0=$(date +%s.%N)
"$BIN" simulate-platform --listen 127.0.0.1:0 --supplier BENCH --accounts "$N" --seed 1 \
    --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.platform" \
    --token-file "$OUT/token" --expected "$OUT/expected.json" --manifest "$OUT/manifest.txt" \
    "${ANOMALIES[@]}" 2> "$OUT/sim.log" &
SIM=$!
for _ in $(seq 1 1200); do
    grep -q "batch played" "$OUT/sim.log" && break
    kill -0 "$SIM" 2>/dev/null || { cat "$OUT/sim.log"; exit 1; }
    sleep 0.25
done
grep "batch played" "$OUT/sim.log"
URL=$(sed -n 's/^simulator listening on //p' "$OUT/sim.log")
t1=$(date +%s.%N)

echo "daemon: ingesting ..."
"$BIN" --log-json run --database-url "$PG/$DB" --stream "$STREAM" --bind-only --consumer bench \
    --http-addr 127.0.0.1:0 --exit-when-idle 2> "$OUT/run.log"
t2=$(date +%s.%N)

SCOPE=(--supplier BENCH)
if [ "${BATCH:-0}" = 1 ]; then
    "$BIN" batch register --database-url "$PG/$DB" --supplier BENCH --name bench --accounts "$OUT/manifest.txt"
    SCOPE=(--batch bench)
fi
echo "reconcile: $BIN reconcile ${SCOPE[*]} --rest-url $URL --rest-token-file <file> --format json ${RECONCILE_ARGS:-}"
set +e
"$BIN" reconcile --database-url "$PG/$DB" "${SCOPE[@]}" --rest-url "$URL" \
    --rest-token-file "$OUT/token" --format json -o "$OUT/report.json" ${RECONCILE_ARGS:-} 2> "$OUT/reconcile.log"
code=$?
set -e
t3=$(date +%s.%N)
tail -1 "$OUT/reconcile.log" | grep -v '^$' || true
grep -q "$(cat "$OUT/token")" "$OUT/report.json" "$OUT/reconcile.log" "$OUT/run.log" "$OUT/sim.log" \
    && { echo "TOKEN LEAKED"; exit 1; }

python3 - "$OUT/report.json" "$OUT/expected.json" "$code" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, sys
rep, exp = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
code = int(sys.argv[3])
t0, t1, t2, t3 = map(float, sys.argv[4:8])
want = {r["external_account_number"]: r["verdict"] for r in exp["results"]}
got = {r["external_account_number"]: r["verdict"] for r in rep["results"]}
wrong = sum(1 for k, v in want.items() if got.get(k) != v) + len(set(got) - set(want))
if rep.get("registration_counts"):
    want_reg = {r["external_account_number"]: r["registration"] for r in exp["results"]}
    got_reg = {r["external_account_number"]: r.get("registration") for r in rep["results"]}
    wrong += sum(1 for k, v in want_reg.items() if got_reg.get(k) != v)
rest = rep["rest"]
from datetime import datetime
ts = lambda x: datetime.fromisoformat(x.replace("Z", "+00:00"))
run_secs = (ts(rep["finished_at"]) - ts(rep["started_at"])).total_seconds()
secs = t3 - t2
print()
print(f"accounts                 {rep['accounts']}")
print(f"simulator play (publish) {t1 - t0:8.2f} s   ({exp['events']} events)")
print(f"daemon ingest            {t2 - t1:8.2f} s")
print(f"reconcile (wall)         {secs:8.2f} s   (the run itself: {run_secs:.2f} s)")
print(f"phases (ms)              {rep.get('timings_ms', {})}")
print(f"REST calls               {rest['calls']} = {rest['list_calls']} list + {rest['account_calls']} per-account "
      f"({rest['attempts']} attempts, {rest['retries']} retries)")
unsettled = sum(v for k, v in exp["counts"].items() if k in ("failed", "dry_run_only", "in_progress", "cancelled", "missing_in_platform"))
print(f"unsettled by the lists   {unsettled}")
print(f"verdicts != ground truth {wrong}")
print(f"exit code                {code}")
print("counts                  ", {k: v for k, v in rep["counts"].items() if v})
if rep.get("registration_counts"):
    print("registrations           ", {k: v for k, v in rep["registration_counts"].items() if v})
verdict = "PASS (< 10 s)" if secs < 10 else ("SLOW (10-30 s)" if secs <= 30 else "NOT DONE (> 30 s)")
print(f"target                   {verdict}")
sys.exit(0 if wrong == 0 and code in (0, 1) else 1)
PY

#!/usr/bin/env bash
# The capacity model's constants, each fitted from a run on this machine (docs/scaling.md uses
# them). The same N messages are ingested by one daemon per batch size (BATCHES, default
# "200 500 2000"), each into a fresh database, and once more at the largest batch with a
# checkpoint signed every second and cosigned by a local witness. Per run it measures:
#   - rows/s, wall seconds;
#   - CPU seconds of PostgreSQL (the postmaster and its children, from /proc) and of the
#     daemon (getrusage of the child), hence rows per PostgreSQL core-second and per daemon
#     core-second;
#   - the chain-head lock: its hold per batch (link statement to commit, from the sink's
#     "batch timings" trace) and the share of wall time it is held;
#   - for the witnessed run: a checkpoint round's mean time (sign, check, witness round trip,
#     publish; the "checkpoint round" debug line) and the share of a second it takes.
# Uses the machine's PostgreSQL and NATS (other load on them shows in the figures).
# Usage: scripts/capacity.sh [N]   (default 200000; BIN=another build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
BATCHES=${BATCHES:-"200 500 2000"}
PG=${PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
PORT=${WITNESS_PORT:-19491}
TAG="cap$$"
STREAM="CAP_${TAG}"
WORK=$(mktemp -d)
DBS=()
WPID=
cleanup() {
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null || true
    "$BIN" bench delete-stream --stream "$STREAM" >/dev/null 2>&1 || true
    "$BIN" bench delete-stream --stream "${STREAM}_CK" >/dev/null 2>&1 || true
    # run_once runs in a subshell (process substitution), so its databases are found by name.
    for db in "${DBS[@]}" $(psql -tA "$PG/postgres" -c "select datname from pg_database where datname like 'ea_cap_${TAG}_%'" 2>/dev/null); do
        psql -q "$PG/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# The shared server's postmaster: its CPU and its children's are PostgreSQL's (other clusters of
# the postgres user, such as a test's private one, are left out).
PG_PID=$(head -1 "$(psql -tA "$PG/postgres" -c 'show data_directory')/postmaster.pid")
pg_cpu() {  # CPU seconds of the postmaster and every process it forked, now
    python3 scripts/pg_cpu.py "$PG_PID"
}

# One run: batch size, extra `run` arguments, log file. Prints "wall pg_cpu daemon_cpu rows".
run_once() {
    local batch=$1 args=$2 log=$3 db="ea_cap_${TAG}_$4"
    DBS+=("$db")
    local pg0 pg1 t0 t1
    pg0=$(pg_cpu)
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    RUST_LOG=event_audit::ingest::sink=trace,event_audit::witnessed::signer=debug,warn \
        python3 scripts/child_cpu.py "$log.cpu" \
        "$BIN" --log-json run --database-url "$PG/$db" --stream "$STREAM" --bind-only \
        --consumer "c$4" --batch-size "$batch" --http-addr 127.0.0.1:0 --exit-when-idle $args \
        2> "$log"
    t1=$(date +%s.%N)
    pg1=$(pg_cpu)
    local rows
    rows=$(psql -tA "$PG/$db" -c "select count(*) from audit.events")
    echo "$(python3 -c "print($t1 - $t0)") $(python3 -c "print($pg1 - $pg0)") $(cat "$log.cpu") $rows"
}

echo "publishing $N messages to $STREAM ..." >&2
"$BIN" publish -n "$N" --stream "$STREAM" --subjects "${TAG}.>" --subject "${TAG}.load" 2>&1 | tail -1 >&2

results="$WORK/results"
i=0
for b in $BATCHES; do
    i=$((i + 1))
    read -r wall pgc dc rows < <(run_once "$b" "" "$WORK/log.$i" "$i")
    read -r _ _ _ _ _ _ link < <(python3 scripts/batch_timings.py "$WORK/log.$i")
    batches=$(grep -c '"batch timings"' "$WORK/log.$i" || true)
    echo "plain $b $wall $pgc $dc $rows $link $batches 0 0" >> "$results"
done

# The largest batch again, signing a checkpoint a second and cosigned by a local witness.
last=${BATCHES##* }
d="$WORK/witness"
mkdir -p "$d"
"$BIN" keygen --out "$d/log" --database-url "$PG/ea_cap_${TAG}_w" >/dev/null 2>&1
"$BIN" keygen --witness --name capacity.example/w1 --out "$d/w" >/dev/null 2>&1
"$BIN" witness serve --key "$d/w.key" --log-key "$d/log.pub" --state-dir "$d/ws" \
    --listen "127.0.0.1:$PORT" > /dev/null 2> "$d/witness.log" &
WPID=$!
printf 'witness %s http://127.0.0.1:%s\nquorum 1\n' "$(cat "$d/w.pub")" "$PORT" > "$d/policy"
for _ in $(seq 50); do curl -sf "127.0.0.1:$PORT/metrics" >/dev/null && break; sleep 0.1; done
args="--signing-key-file $d/log.key --checkpoint-interval 1s --checkpoint-stream ${STREAM}_CK --witness-policy $d/policy"
read -r wall pgc dc rows < <(run_once "$last" "$args" "$WORK/log.w" "w")
read -r _ _ _ _ _ _ link < <(python3 scripts/batch_timings.py "$WORK/log.w")
batches=$(grep -c '"batch timings"' "$WORK/log.w" || true)
read -r rounds round_ms < <(python3 - "$WORK/log.w" <<'PY'
import json, sys
ms = []
for line in open(sys.argv[1]):
    try:
        f = json.loads(line).get("fields", {})
    except ValueError:
        continue
    if f.get("message") == "checkpoint round":
        ms.append(f["ms"])
print(len(ms), sum(ms) / len(ms) if ms else 0)
PY
)
echo "witnessed $last $wall $pgc $dc $rows $link $batches $rounds $round_ms" >> "$results"

python3 - "$results" "$(nproc)" <<'PY'
import sys
rows_ = [l.split() for l in open(sys.argv[1])]
cores = int(sys.argv[2])
print(f"{'run':10} {'batch':>5} {'rows/s':>8} {'wall s':>7} {'pg cpu s':>8} {'rows/pg-core-s':>14} "
      f"{'rows/daemon-core-s':>18} {'hold ms/batch':>13} {'lock share':>10} {'round ms':>8}")
for run, b, wall, pgc, dc, rows, link, batches, rounds, round_ms in rows_:
    b, wall, pgc, dc, rows = int(b), float(wall), float(pgc), float(dc), int(rows)
    link, batches, rounds, round_ms = float(link), int(batches), int(rounds), float(round_ms)
    hold = link / max(batches, 1)
    share = link / 1000 / wall
    print(f"{run:10} {b:5d} {rows / wall:8.0f} {wall:7.2f} {pgc:8.2f} {rows / max(pgc, 1e-9):14.0f} "
          f"{rows / max(dc, 1e-9):18.0f} {hold:13.2f} {share:10.3f} "
          f"{round_ms if rounds else float('nan'):8.1f}")
plain = [r for r in rows_ if r[0] == "plain"]
print()
for run, b, wall, pgc, dc, rows, link, batches, *_ in plain:
    hold = float(link) / max(int(batches), 1) / 1000
    if hold > 0:
        print(f"batch {b}: the chain-head lock alone allows {int(b) / hold:,.0f} rows/s "
              f"(batch / hold); at this run's rate it is held {float(link) / 1000 / float(wall):.1%} of the time")
print(f"({cores} cores here, shared by PostgreSQL, NATS and the daemon)")
PY

#!/usr/bin/env bash
# Chaos soak: two daemons on one durable consumer, under a steady publish load, for MINUTES,
# while faults are injected at random intervals; then every published stream sequence must be in
# the log exactly once, nothing the publisher got acked may be missing, `verify --public-key`
# with the witness policy must be intact with the newest checkpoint cosigned, and the unkilled
# daemon's RSS and open file descriptors must be flat. Not a CI test: a script beside the
# benchmarks, figures in BENCHMARKS.md.
#
# Everything is private, under a temporary directory, on free ports of 127.0.0.1 (the machine's
# shared PostgreSQL and NATS are never touched):
#   - PostgreSQL 15 from initdb, run as the `postgres` user (pg_ctl), and in front of it a TCP proxy
#     that can stall (scripts/soak_proxy.py): the daemons reach the database only through it;
#   - a three-node NATS JetStream cluster (one config file per node: server_name, listen,
#     jetstream store_dir, cluster name/listen/routes), the audit stream and the checkpoint
#     stream created with 3 replicas before the daemons start (scripts/soak_js.py, so that the
#     soak also runs builds older than `run --stream-replicas` and `--checkpoint-replicas`);
#   - a witness (`witness serve`, its key and the log's from `keygen`) and a witness policy with
#     quorum 1;
#   - daemons d1 and d2 (`run --bind-only`, one consumer, distinct --instance, all three NATS URLs,
#     checkpoints signed with one log key, each its own signer state, witnessed);
#   - the publisher (scripts/soak_publish.py): RATE messages/s, unique envelope ids and
#     Nats-Msg-Id, retried until acked (JetStream's duplicate window keeps retries single), every
#     acked stream sequence written down.
# Faults, one at a time, after a pause drawn uniformly from GAP_MIN..GAP_MAX seconds (bash RANDOM
# seeded with SEED), the kind drawn uniformly from FAULTS:
#   daemon    SIGKILL of d2 (only d2 is ever killed: d1 is the flatness witness), restarted after
#             DOWN_MIN..DOWN_MAX seconds
#   postgres  `pg_ctl restart -m fast` of the private PostgreSQL (every session ended)
#   nats      SIGKILL of one NATS node drawn at random, restarted after DOWN_MIN..DOWN_MAX seconds;
#             the next fault waits until both streams have 3 current replicas again
#   stall     the proxy holds every open database connection silent for STALL_SECS seconds
# Every minute (SAMPLE_SECS) each daemon's VmRSS and open descriptors go to samples.csv, with its
# PID: a restarted d2 is a new lifetime. A component that exits without being killed is logged
# as UNEXPECTED and restarted. At the end: publishing stops, the consumer drains, the newest
# checkpoint covering every row is awaited, each daemon's /metrics is saved, the daemons get
# SIGTERM (exit 0 expected), and the checks run (any failing one fails the soak):
#   - in SQL on audit.events: every sequence 1..last of the stream exactly once (no duplicate,
#     no gap, nothing else), every sequence the publisher got acked present, rows = acks;
#   - `verify --public-key --witness-policy --full`, as an auditor runs it (nothing ANALYZEd
#     first), within VERIFY_TIMEOUT; past it the statement running is logged, the log is checked
#     again after `ANALYZE audit.events` so that its integrity is still known, and the soak fails;
#   - a cosigned checkpoint at the log's full size; the witness's refusals classified from its
#     log (a stale old size, or the size it holds resubmitted, are the protocol at work; any
#     other is evidence); no ERROR line in the daemons' logs; signer_ok 1 in both daemons;
#   - d1 flat: the median RSS of the last third of its samples within 25% + 16 MB of the first
#     third's (the first sample, warm-up, left out), and its largest fd count within 16.
# The summary (stdout and summary.txt), events.log, samples.csv and every log are kept in
# OUT (default target/soak/<UTC time>); the temporary directory is removed (KEEP=1 keeps it).
# Exit 0 only when every check passed.
#
# Usage: scripts/soak.sh [MINUTES]   (default 30)
#   env: BIN (default target/release/event-audit, built when it is that), RATE=1000, SEED,
#        GAP_MIN=30 GAP_MAX=90, DOWN_MIN=2 DOWN_MAX=8, STALL_SECS=10,
#        FAULTS=daemon,postgres,nats,stall, SAMPLE_SECS=60, DRAIN_TIMEOUT=600,
#        CHECKPOINT_INTERVAL=10s, VERIFY_TIMEOUT=600, OUT, KEEP=0
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MINUTES=${1:-30}
case "$MINUTES" in '' | *[!0-9]*) echo "usage: scripts/soak.sh [MINUTES]" >&2; exit 2;; esac
BIN=${BIN:-target/release/event-audit}
RATE=${RATE:-1000}
SEED=${SEED:-$RANDOM}
GAP_MIN=${GAP_MIN:-30}
GAP_MAX=${GAP_MAX:-90}
DOWN_MIN=${DOWN_MIN:-2}
DOWN_MAX=${DOWN_MAX:-8}
STALL_SECS=${STALL_SECS:-10}
FAULTS=${FAULTS:-daemon,postgres,nats,stall}
SAMPLE_SECS=${SAMPLE_SECS:-60}
DRAIN_TIMEOUT=${DRAIN_TIMEOUT:-600}
CHECKPOINT_INTERVAL=${CHECKPOINT_INTERVAL:-10s}
VERIFY_TIMEOUT=${VERIFY_TIMEOUT:-600}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
NATS_SERVER=${NATS_SERVER:-/usr/sbin/nats-server}
STARTED_AT=$(date -u +%Y-%m-%dT%H:%M:%SZ)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
OUT=${OUT:-target/soak/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
RANDOM=$SEED
IFS=, read -r -a FAULT_KINDS <<< "$FAULTS"

[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
[ "${BIN#/}" = "$BIN" ] && BIN=$ROOT/$BIN
[ -x "$BIN" ] || { echo "no binary at $BIN" >&2; exit 2; }
python3 -c "import nats" 2>/dev/null || python3 -m pip install --quiet nats-py

W=$(mktemp -d "${TMPDIR:-/tmp}/event-audit-soak.XXXXXX")
chmod 755 "$W"
STREAM=SOAK
SUBJECTS="soak.>"
SUBJECT=soak.load
CONSUMER=soak
CK_STREAM=SOAK_CHECKPOINTS
CK_SUBJECT="event-audit.checkpoints.$CK_STREAM"
DB=event_audit

log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $*" | tee -a "$OUT/events.log"; }

# ---- processes: every PID this script started, ended by PID on exit --------------------------
declare -A PIDS=()      # name -> pid
PROXY_PID=
PUB_PID=
SAMPLER_PID=
PGDATA=$W/pg/data
stop_sampler() {  # the sampling subshell and its sleep, by PID
    [ -n "$SAMPLER_PID" ] || return 0
    kill -STOP "$SAMPLER_PID" 2>/dev/null || true  # no new child meanwhile
    pkill -KILL -P "$SAMPLER_PID" 2>/dev/null || true
    kill -KILL "$SAMPLER_PID" 2>/dev/null || true
    SAMPLER_PID=
}
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    exec 2>/dev/null  # no "Killed" job notices
    for name in "${!PIDS[@]}"; do
        kill -KILL "${PIDS[$name]}" 2>/dev/null || true
    done
    stop_sampler
    for p in $PUB_PID $PROXY_PID; do kill -KILL "$p" 2>/dev/null || true; done
    if [ -f "$PGDATA/postmaster.pid" ]; then
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    wait 2>/dev/null || true
    cp "$W/pg/postgres.log" "$OUT/postgres.log" 2>/dev/null || true
    if [ "${KEEP:-0}" = 1 ]; then echo "kept $W"; else rm -rf "$W"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() {  # N distinct ports that were free a moment ago, outside the ephemeral range
    python3 - "$1" <<'PY'
import random, socket, sys
n, out = int(sys.argv[1]), []
while len(out) < n:
    p = random.randint(20000, 32000)
    if p in out:
        continue
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        out.append(p)
    except OSError:
        pass
    finally:
        s.close()
print(" ".join(map(str, out)))
PY
}
read -r PG_PORT PROXY_PORT N1 N2 N3 C1 C2 C3 M1 M2 M3 WITNESS_PORT H1 H2 <<< "$(free_ports 14)"
NPORT=([1]=$N1 [2]=$N2 [3]=$N3)
CPORT=([1]=$C1 [2]=$C2 [3]=$C3)
MPORT=([1]=$M1 [2]=$M2 [3]=$M3)
HPORT=([1]=$H1 [2]=$H2)
NATS_URLS="nats://127.0.0.1:$N1,nats://127.0.0.1:$N2,nats://127.0.0.1:$N3"
DB_DIRECT="postgres://postgres@127.0.0.1:$PG_PORT/$DB"
DB_PROXIED="postgres://postgres@127.0.0.1:$PROXY_PORT/$DB"
psql_q() { psql -X -q -tA "$DB_DIRECT" -v ON_ERROR_STOP=1 "$@"; }

wait_port() {  # port seconds
    local i
    for i in $(seq $(($2 * 10))); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
rand_between() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }

# ---- PostgreSQL ------------------------------------------------------------------------------
start_postgres() {
    mkdir -p "$W/pg"
    chown postgres: "$W/pg"
    runuser -u postgres -- "$PG_BIN/initdb" -D "$PGDATA" -U postgres -E UTF8 --locale=C \
        --auth=trust >"$OUT/initdb.log" 2>&1
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$W/pg/postgres.log" -w -t 60 start \
        -o "-p $PG_PORT -k $W/pg -c listen_addresses=127.0.0.1 -c max_connections=100" >/dev/null
}
restart_postgres() {
    runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$W/pg/postgres.log" -m fast -w -t 120 \
        restart >/dev/null
}

# ---- NATS ------------------------------------------------------------------------------------
write_nats_conf() {  # node
    local n=$1 routes="" m
    for m in 1 2 3; do
        [ "$m" = "$n" ] || routes="$routes nats-route://127.0.0.1:${CPORT[$m]}"
    done
    mkdir -p "$W/nats$n"
    cat > "$W/nats$n/nats.conf" <<EOF
server_name: soak-n$n
listen: 127.0.0.1:${NPORT[$n]}
http: 127.0.0.1:${MPORT[$n]}
jetstream { store_dir: "$W/nats$n/js" }
cluster {
  name: soak
  listen: 127.0.0.1:${CPORT[$n]}
  routes: [$(echo $routes | sed 's/ /, /g')]
}
EOF
}
start_nats() {  # node
    "$NATS_SERVER" -c "$W/nats$1/nats.conf" >>"$OUT/nats$1.log" 2>&1 &
    PIDS[nats$1]=$!
}

# ---- the daemons -----------------------------------------------------------------------------
start_daemon() {  # 1|2
    local i=$1
    "$BIN" --log-json run --database-url "$DB_PROXIED" --nats-url "$NATS_URLS" \
        --stream "$STREAM" --subjects "$SUBJECTS" --consumer "$CONSUMER" --bind-only \
        --instance "soak-d$i" --http-addr "127.0.0.1:${HPORT[$i]}" \
        --signing-key-file "$W/keys/log.key" --signer-state "$W/keys/d$i.state" \
        --witness-policy "$W/policy" --checkpoint-stream "$CK_STREAM" \
        --checkpoint-interval "$CHECKPOINT_INTERVAL" >>"$OUT/d$i.log" 2>&1 &
    PIDS[d$i]=$!
    echo "${PIDS[d$i]}" > "$W/d$i.pid"
}
daemon_ready() {  # 1|2 seconds
    local i
    for i in $(seq $(($2 * 5))); do
        curl -sf "127.0.0.1:${HPORT[$1]}/readyz" >/dev/null 2>&1 && return 0
        kill -0 "${PIDS[d$1]}" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# ---- setup -----------------------------------------------------------------------------------
log "soak: $MINUTES min, $RATE msg/s, seed $SEED, faults $FAULTS every ${GAP_MIN}-${GAP_MAX} s; work dir $W; results $OUT"
log "binary $BIN ($("$BIN" --version 2>&1 | head -1))"
start_postgres
log "postgres up on 127.0.0.1:$PG_PORT (pid $(head -1 "$PGDATA/postmaster.pid"))"
echo "$STALL_SECS" > "$W/stall"
python3 scripts/soak_proxy.py "$PROXY_PORT" "$PG_PORT" "$W/stall" 2>>"$OUT/proxy.log" &
PROXY_PID=$!
wait_port "$PROXY_PORT" 10 || { log "FAIL: the proxy did not listen"; exit 1; }
for n in 1 2 3; do write_nats_conf "$n"; start_nats "$n"; done
for n in 1 2 3; do wait_port "${NPORT[$n]}" 20 || { log "FAIL: nats node $n did not start"; exit 1; }; done
# The meta leader needs a moment after the routes connect.
for _ in $(seq 60); do
    python3 scripts/soak_js.py "$NATS_URLS" create-streams "$STREAM" "$SUBJECTS" "$CK_STREAM" \
        "$CK_SUBJECT" 3 >"$W/streams.out" 2>&1 && break
    sleep 1
done
grep -q "replicas=3" "$W/streams.out" || { cat "$W/streams.out"; log "FAIL: could not create the streams"; exit 1; }
log "nats cluster up (client ports $N1 $N2 $N3); $(tr '\n' ';' < "$W/streams.out")"

mkdir -p "$W/keys"
"$BIN" keygen --out "$W/keys/log" --database-url "$DB_DIRECT" >"$OUT/keygen.log" 2>&1
"$BIN" keygen --witness --name soak.example/w1 --out "$W/keys/w" >>"$OUT/keygen.log" 2>&1
"$BIN" witness serve --key "$W/keys/w.key" --log-key "$W/keys/log.pub" --state-dir "$W/witness" \
    --listen "127.0.0.1:$WITNESS_PORT" >>"$OUT/witness.log" 2>&1 &
PIDS[witness]=$!
printf 'witness %s http://127.0.0.1:%s\nquorum 1\n' "$(cat "$W/keys/w.pub")" "$WITNESS_PORT" > "$W/policy"
wait_port "$WITNESS_PORT" 20 || { log "FAIL: the witness did not listen"; exit 1; }

start_daemon 1
daemon_ready 1 120 || { tail -5 "$OUT/d1.log"; log "FAIL: d1 not ready"; exit 1; }
start_daemon 2
daemon_ready 2 120 || { tail -5 "$OUT/d2.log"; log "FAIL: d2 not ready"; exit 1; }
log "daemons ready: d1 pid ${PIDS[d1]}, d2 pid ${PIDS[d2]}; witness pid ${PIDS[witness]}"

# ---- load and sampling -----------------------------------------------------------------------
SECONDS_TOTAL=$((MINUTES * 60))
mkdir -p "$OUT/publisher"
python3 scripts/soak_publish.py "$NATS_URLS" "$STREAM" "$SUBJECT" "$RATE" "$SECONDS_TOTAL" \
    "$OUT/publisher" tests/corpus/valid.jsonl "soak$$" 2>>"$OUT/publisher.log" &
PUB_PID=$!

echo "time,elapsed_s,daemon,pid,rss_kb,fds,threads" > "$OUT/samples.csv"
(
    t0=$(date +%s)
    while :; do
        for i in 1 2; do
            pid=$(cat "$W/d$i.pid" 2>/dev/null) || continue
            st=/proc/$pid/status
            rss=$(awk '/^VmRSS:/ {print $2}' "$st" 2>/dev/null) || continue
            thr=$(awk '/^Threads:/ {print $2}' "$st" 2>/dev/null) || continue
            fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
            [ -n "$rss" ] && echo "$(date -u +%H:%M:%S),$(($(date +%s) - t0)),d$i,$pid,$rss,$fds,$thr" >> "$OUT/samples.csv"
        done
        sleep "$SAMPLE_SECS"
    done
) &
SAMPLER_PID=$!

# ---- faults ----------------------------------------------------------------------------------
declare -A FAULT_COUNT=()
for k in "${FAULT_KINDS[@]}"; do FAULT_COUNT[$k]=0; done
UNEXPECTED=0
check_alive() {  # a daemon, the witness or a NATS node that exited without being killed
    local name
    for name in d1 d2 witness nats1 nats2 nats3; do
        [ -n "${PIDS[$name]:-}" ] || continue
        if ! kill -0 "${PIDS[$name]}" 2>/dev/null; then
            local rc=0
            wait "${PIDS[$name]}" || rc=$?
            UNEXPECTED=$((UNEXPECTED + 1))
            log "UNEXPECTED: $name (pid ${PIDS[$name]}) exited by itself, status $rc; restarting it"
            case $name in
                d1|d2) tail -3 "$OUT/$name.log" | sed 's/^/    /' | tee -a "$OUT/events.log"
                       start_daemon "${name#d}" ;;
                nats*) start_nats "${name#nats}" ;;
                witness) log "the witness is not restarted"; unset "PIDS[witness]" ;;
            esac
        fi
    done
    if ! runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1; then
        UNEXPECTED=$((UNEXPECTED + 1))
        log "UNEXPECTED: postgres is not running; starting it"
        runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$W/pg/postgres.log" -w -t 120 start >/dev/null || true
    fi
}

inject() {  # kind
    local kind=$1 down t0 node pid
    FAULT_COUNT[$kind]=$((FAULT_COUNT[$kind] + 1))
    case $kind in
        daemon)
            down=$(rand_between "$DOWN_MIN" "$DOWN_MAX")
            pid=${PIDS[d2]}
            kill -KILL "$pid"
            wait "$pid" 2>/dev/null || true
            log "fault daemon: SIGKILL d2 (pid $pid); restart in $down s"
            sleep "$down"
            start_daemon 2
            if daemon_ready 2 120; then
                log "  d2 restarted (pid ${PIDS[d2]}), ready"
            else
                log "  d2 restarted (pid ${PIDS[d2]}) NOT ready after 120 s"
            fi ;;
        postgres)
            t0=$(date +%s.%N)
            log "fault postgres: pg_ctl restart -m fast (postmaster pid $(head -1 "$PGDATA/postmaster.pid"))"
            if restart_postgres; then
                log "  postgres back in $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s (pid $(head -1 "$PGDATA/postmaster.pid"))"
            else
                log "  pg_ctl restart FAILED"
            fi ;;
        nats)
            node=$(rand_between 1 3)
            down=$(rand_between "$DOWN_MIN" "$DOWN_MAX")
            pid=${PIDS[nats$node]}
            kill -KILL "$pid"
            wait "$pid" 2>/dev/null || true
            log "fault nats: SIGKILL node $node (pid $pid); restart in $down s"
            sleep "$down"
            start_nats "$node"
            t0=$(date +%s.%N)
            if python3 scripts/soak_js.py "$NATS_URLS" wait-healthy 3 180 "$STREAM" "$CK_STREAM" >>"$OUT/events.log" 2>&1; then
                log "  node $node restarted (pid ${PIDS[nats$node]}); both streams 3 current replicas after $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
            else
                log "  node $node restarted (pid ${PIDS[nats$node]}); streams NOT back to 3 current replicas in 180 s"
            fi ;;
        stall)
            echo "$STALL_SECS" > "$W/stall"
            kill -USR1 "$PROXY_PID"
            log "fault stall: database connections through the proxy silent for $STALL_SECS s"
            sleep "$STALL_SECS" ;;
        *) log "unknown fault kind $kind"; exit 2 ;;
    esac
}

END=$(($(date +%s) + SECONDS_TOTAL))
while :; do
    gap=$(rand_between "$GAP_MIN" "$GAP_MAX")
    (( $(date +%s) + gap < END - 10 )) || break
    # Wait the gap in slices, watching that nothing died on its own.
    until_t=$(($(date +%s) + gap))
    while (( $(date +%s) < until_t )); do
        sleep 1
        check_alive
    done
    inject "${FAULT_KINDS[RANDOM % ${#FAULT_KINDS[@]}]}"
done
while (( $(date +%s) < END )); do sleep 1; check_alive; done
log "load phase over; waiting for the publisher's last acks"
wait "$PUB_PID" || log "the publisher exited non-zero"
PUB_PID=
check_alive

# ---- drain and wind down ---------------------------------------------------------------------
read -r S_MSGS S_FIRST S_LAST S_REPL S_CUR < <(python3 scripts/soak_js.py "$NATS_URLS" stream-info "$STREAM")
log "stream $STREAM: $S_MSGS messages, sequences $S_FIRST..$S_LAST, replicas $S_REPL ($S_CUR current)"
t0=$(date +%s)
if python3 scripts/soak_js.py "$NATS_URLS" wait-drained "$STREAM" "$CONSUMER" "$DRAIN_TIMEOUT" >"$W/drain.out" 2>&1; then
    DRAINED=yes; log "consumer drained in $(($(date +%s) - t0)) s"
else
    DRAINED=no; log "consumer NOT drained after $DRAIN_TIMEOUT s"
fi
read -r C_PENDING C_ACKPENDING C_REDELIVERED _ C_ACKFLOOR < <(python3 scripts/soak_js.py "$NATS_URLS" consumer-info "$STREAM" "$CONSUMER")
# The newest checkpoint, cosigned, at the log's full size: up to 3 checkpoint intervals and a bit.
CKPT=no
for _ in $(seq 120); do
    size=$(psql_q -c "select tree_size from audit.chain_head" 2>/dev/null || echo -1)
    ck=$(psql_q -c "select coalesce(max(tree_size), 0) from audit.checkpoints where log = 'events' and published and cosignatures is not null" 2>/dev/null || echo -2)
    if [ "$size" = "$ck" ] && [ "$size" -gt 0 ]; then CKPT=yes; break; fi
    sleep 1
done
log "newest cosigned checkpoint at size ${ck:-?} (log size ${size:-?}): $CKPT"
stop_sampler
# Each daemon's own view before it stops (d2's covers its last lifetime only).
metric() {  # file name: the sum of the series of that metric
    awk -v m="$2" '$1 == m || index($1, m "{") == 1 {s += $NF; n++} END {if (n) print s + 0; else print "-"}' "$1"
}
for i in 1 2; do
    curl -sf "127.0.0.1:${HPORT[$i]}/metrics" > "$OUT/d$i.metrics" 2>/dev/null || true
    f=$OUT/d$i.metrics
    eval "D${i}_SIGNER_OK=$(metric "$f" event_audit_checkpoint_signer_ok)"
    eval "D${i}_METRICS='signer_ok $(metric "$f" event_audit_checkpoint_signer_ok), backlog $(metric "$f" event_audit_checkpoint_backlog_checkpoints), signer refusals $(metric "$f" event_audit_checkpoint_refusals_total), witness failures $(metric "$f" event_audit_checkpoint_witness_failures_total), publish failures $(metric "$f" event_audit_checkpoint_publish_failures_total), write retries $(metric "$f" event_audit_db_write_retries_total), redeliveries $(metric "$f" event_audit_ingest_redeliveries_total), leader changes $(metric "$f" event_audit_bus_leader_changes_total)'"
done
for i in 1 2; do
    pid=${PIDS[d$i]}
    kill -TERM "$pid" 2>/dev/null || true
    rc=0; wait "$pid" || rc=$?
    unset "PIDS[d$i]"
    eval "D${i}_EXIT=$rc"
    log "d$i (pid $pid) stopped by SIGTERM: exit $rc"
done

# ---- checks ----------------------------------------------------------------------------------
PUB=$OUT/publisher/summary.json
if [ ! -f "$PUB" ]; then
    log "FAIL: the publisher left no summary (publisher.log:)"; tail -5 "$OUT/publisher.log"
    exit 1
fi
pubv() { python3 -c "import json,sys; print(json.load(open('$PUB'))['$1'])"; }
PUBLISHED=$(pubv published); ACKED=$(pubv acked); GIVEN_UP=$(pubv given_up)
ACK_DUP=$(pubv acked_duplicate); RETRIES=$(pubv retries); LAST_ACKED=$(pubv last_acked_seq)
ACHIEVED=$(pubv rate)
psql_q -c "create table if not exists public.soak_acked (seq bigint)" -c "truncate public.soak_acked"
psql_q -c "\\copy public.soak_acked from '$OUT/publisher/acked.txt'"
read -r ROWS DISTINCT DUPS MISSING EXTRA ACKED_MISSING ACKED_DISTINCT REDELIVERED_ROWS FINDINGS LINKS SPLIT < <(psql_q -F ' ' <<SQL
select (select count(*) from audit.events where stream = '$STREAM'),
       (select count(distinct stream_seq) from audit.events where stream = '$STREAM'),
       (select count(*) - count(distinct stream_seq) from audit.events where stream = '$STREAM'),
       $S_LAST - (select count(distinct stream_seq) from audit.events
                   where stream = '$STREAM' and stream_seq between 1 and $S_LAST),
       (select count(*) from audit.events where stream <> '$STREAM' or stream_seq < 1 or stream_seq > $S_LAST),
       (select count(*) from public.soak_acked a where not exists
          (select 1 from audit.events e where e.stream = '$STREAM' and e.stream_seq = a.seq)),
       (select count(distinct seq) from public.soak_acked),
       (select count(*) from audit.events where stream = '$STREAM' and delivery_count > 1),
       (select count(*) from audit.id_findings),
       (select count(*) from audit.chain_links),
       (select coalesce(string_agg(instance || '=' || n, ',' order by instance), '-')
          from (select instance, sum(row_count) n from audit.chain_links group by 1) x);
SQL
)
psql_q -c "drop table public.soak_acked"

# verify as an auditor would run it, bounded by VERIFY_TIMEOUT. Nothing is ANALYZEd first:
# autovacuum analyzes the partitions, never the partitioned parent, and that is how a deployed
# log looks. If it does not finish in time, the slow statement is logged, the log is checked
# again after `ANALYZE audit.events` (so that its integrity is still known), and the soak fails.
run_verify() {  # output file -> exit status (124 or 137: timed out)
    local t0 rc=0
    t0=$(date +%s.%N)
    timeout -s INT -k 30 "$VERIFY_TIMEOUT" "$BIN" verify --database-url "$DB_DIRECT" --nats-url "$NATS_URLS" \
        --public-key "$W/keys/log.pub" --witness-policy "$W/policy" --checkpoint-stream "$CK_STREAM" \
        --state-file "$W/verify-state.json" --full > "$1" 2>&1 || rc=$?
    VERIFY_SECS=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
    return "$rc"
}
VERIFY_RC=0
VERIFY_OUT=$OUT/verify.txt
run_verify "$VERIFY_OUT" || VERIFY_RC=$?
VERIFY_NOTE="${VERIFY_SECS} s"
if [ "$VERIFY_RC" = 124 ] || [ "$VERIFY_RC" = 137 ]; then
    log "verify did not finish in $VERIFY_TIMEOUT s; the statement still running:"
    psql_q -c "select now() - query_start, query from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid()" \
        | tee -a "$OUT/events.log"
    psql_q -c "select pg_cancel_backend(pid) from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid()" >/dev/null
    psql_q -c "analyze audit.events"
    rm -f "$W/verify-state.json"
    VERIFY_RC=0
    run_verify "$OUT/verify-after-analyze.txt" || VERIFY_RC=$?
    log "verify after ANALYZE audit.events: exit $VERIFY_RC in $VERIFY_SECS s"
    VERIFY_NOTE="did not finish in $VERIFY_TIMEOUT s; after ANALYZE audit.events: $VERIFY_SECS s"
    VERIFY_TIMED_OUT=yes
    VERIFY_OUT=$OUT/verify-after-analyze.txt
fi
VERIFY_LINE=$(grep -v -E '^(\s*$|\{|[0-9]{4}-[0-9]{2}-[0-9]{2}T|no earlier state)' "$VERIFY_OUT" | paste -sd';' | sed 's/;/; /g')
COSIGNED=$(curl -sf "127.0.0.1:$WITNESS_PORT/metrics" \
    | awk '/^event_audit_witness_cosignatures_total/ {s += $NF} END {print s + 0}')
REFUSED=$(curl -sf "127.0.0.1:$WITNESS_PORT/metrics" \
    | awk '/^event_audit_witness_refusals_total/ {s += $NF} END {print s + 0}')
# The witness's refusals, from its WARN lines (all 409 `conflict` so far). Two kinds are the
# protocol at work, not evidence: a checkpoint larger than the one the witness holds, sent with
# a stale old size (a restarted daemon, or the other daemon signed last), and the size it holds
# sent again (a cosigned checkpoint whose publication to NATS failed stays queued and is
# resubmitted); the submitter learns the size from the 409 and submits again. A fork would
# also show the size it holds, but then the signer stops with an ERROR line (checked below).
# A smaller size than it holds, or another reason, is evidence.
read -r REFUSED_STALE REFUSED_AGAIN REFUSED_EVIDENCE < <(python3 - "$OUT/witness.log" <<'PY'
import re, sys
stale = again = evidence = 0
for line in open(sys.argv[1], errors="replace"):
    if "refused a checkpoint" not in line:
        continue
    f = dict(re.findall(r'(\w+)="?([^\s"]+)"?', line))
    size, known = int(f.get("size", 0)), int(f.get("known", -1))
    if f.get("reason") == "conflict" and size > known:
        stale += 1
    elif f.get("reason") == "conflict" and size == known:
        again += 1
    else:
        evidence += 1
print(stale, again, evidence)
PY
)
# What the daemons logged at WARN and above, by message, over every lifetime.
python3 - "$OUT/d1.log" "$OUT/d2.log" > "$W/warns.txt" <<'PY'
import collections, json, sys
for path in sys.argv[1:]:
    c = collections.Counter()
    for line in open(path, errors="replace"):
        try:
            j = json.loads(line)
        except ValueError:
            if line.strip():
                c[("(not JSON)", line.strip()[:100])] += 1
            continue
        if j.get("level") in ("WARN", "ERROR"):
            c[(j["level"], j.get("fields", {}).get("message", "")[:110])] += 1
    name = path.rsplit("/", 1)[-1].split(".")[0]
    for (level, msg), n in c.most_common():
        print(f"  {name} {level:5s} {n:6d}  {msg}")
PY
ERROR_LINES=$(awk '$2 == "ERROR" {s += $3} END {print s + 0}' "$W/warns.txt")

# RSS and fds per daemon lifetime; flatness judged on d1 (never killed).
python3 - "$OUT/samples.csv" > "$W/mem.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
lives = {}
for r in rows:
    lives.setdefault((r["daemon"], r["pid"]), []).append(r)
verdict = "FLAT"
for (d, pid), rs in sorted(lives.items(), key=lambda kv: (kv[0][0], int(kv[1][0]["elapsed_s"]))):
    rss = [int(r["rss_kb"]) / 1024 for r in rs]
    fds = [int(r["fds"]) for r in rs]
    print(f"LIFE {d} {pid} {len(rs)} {rss[0]:.1f} {rss[-1]:.1f} {max(rss):.1f} {fds[0]} {fds[-1]} {max(fds)}")
d1 = [r for r in rows if r["daemon"] == "d1"]
if len({r["pid"] for r in d1}) != 1 or len(d1) < 3:
    print("FLATNESS d1 n/a (fewer than 3 samples of one lifetime)")
else:
    # The first sample is warm-up. Flat: the last third's median RSS within 25% + 16 MB of the
    # first third's, and the last third's largest fd count within 16 of the first third's.
    rs = d1[1:]
    k = max(1, len(rs) // 3)
    rss_a = statistics.median(int(r["rss_kb"]) / 1024 for r in rs[:k])
    rss_b = statistics.median(int(r["rss_kb"]) / 1024 for r in rs[-k:])
    fd_a = max(int(r["fds"]) for r in rs[:k])
    fd_b = max(int(r["fds"]) for r in rs[-k:])
    ok = rss_b <= rss_a * 1.25 + 16 and fd_b <= fd_a + 16
    print(f"FLATNESS d1 {'FLAT' if ok else 'GROWING'} rss {rss_a:.1f}->{rss_b:.1f} MB fds {fd_a}->{fd_b}")
PY
FLAT=$(awk '$1 == "FLATNESS" {print $3}' "$W/mem.txt")

# ---- summary ---------------------------------------------------------------------------------
FAILS=()
[ "$DRAINED" = yes ] || FAILS+=("consumer not drained")
[ "$DUPS" = 0 ] || FAILS+=("$DUPS duplicate sequence(s) in the log")
[ "$MISSING" = 0 ] || FAILS+=("$MISSING stream sequence(s) missing from the log")
[ "$EXTRA" = 0 ] || FAILS+=("$EXTRA row(s) outside the stream's sequences")
[ "$ACKED_MISSING" = 0 ] || FAILS+=("$ACKED_MISSING acked sequence(s) not in the log")
[ "$ACKED" = "$ROWS" ] || FAILS+=("publisher acked $ACKED, log holds $ROWS rows")
[ "$ACKED_DISTINCT" = "$ACKED" ] || FAILS+=("the publisher got $((ACKED - ACKED_DISTINCT)) sequence(s) acked twice")
[ "$S_MSGS" = "$S_LAST" ] || FAILS+=("stream holds $S_MSGS messages for $S_LAST sequences")
[ "$VERIFY_RC" = 0 ] || FAILS+=("verify exit $VERIFY_RC")
[ -z "${VERIFY_TIMED_OUT:-}" ] || FAILS+=("verify did not finish in $VERIFY_TIMEOUT s (before ANALYZE audit.events)")
[ "$CKPT" = yes ] || FAILS+=("no cosigned checkpoint at the log's size")
[ "$UNEXPECTED" = 0 ] || FAILS+=("$UNEXPECTED unexpected exit(s)")
[ "$D1_EXIT" = 0 ] && [ "$D2_EXIT" = 0 ] || FAILS+=("daemon exit on SIGTERM: d1 $D1_EXIT, d2 $D2_EXIT")
[ "$D1_SIGNER_OK" != 0 ] && [ "$D2_SIGNER_OK" != 0 ] || FAILS+=("a daemon's checkpoint signer stopped (signer_ok 0)")
[ "$FLAT" != GROWING ] || FAILS+=("d1 RSS or fds growing")
[ "$REFUSED_EVIDENCE" = 0 ] || FAILS+=("the witness refused $REFUSED_EVIDENCE checkpoint(s) as evidence against the log")
[ "$ERROR_LINES" = 0 ] || FAILS+=("$ERROR_LINES ERROR line(s) in the daemons' logs")
faults=""
total=0
for k in "${FAULT_KINDS[@]}"; do faults="$faults $k=${FAULT_COUNT[$k]}"; total=$((total + FAULT_COUNT[$k])); done

{
    echo "event-audit soak, $STARTED_AT, scripts/soak.sh $MINUTES (RATE=$RATE SEED=$SEED GAP=$GAP_MIN-$GAP_MAX s FAULTS=$FAULTS)"
    echo "binary: $("$BIN" --version 2>&1 | head -1); machine: $(nproc) cores, load average at the start $LOAD_START, at the end $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-34s %s\n' "minutes of load" "$MINUTES"
    printf '%-34s %s\n' "published (rate achieved)" "$PUBLISHED ($ACHIEVED/s)"
    printf '%-34s %s\n' "acked to the publisher" "$ACKED ($ACK_DUP acked as duplicate after a retry, $RETRIES retries, $GIVEN_UP given up; last seq $LAST_ACKED)"
    printf '%-34s %s\n' "stream messages" "$S_MSGS (seq $S_FIRST..$S_LAST, $S_REPL replicas)"
    printf '%-34s %s\n' "rows in audit.events" "$ROWS"
    printf '%-34s %s\n' "duplicate sequences" "$DUPS"
    printf '%-34s %s\n' "missing sequences" "$MISSING"
    printf '%-34s %s\n' "acked but not in the log" "$ACKED_MISSING"
    printf '%-34s %s\n' "rows delivered more than once" "$REDELIVERED_ROWS (redelivered and written once)"
    printf '%-34s %s\n' "envelope-id findings" "$FINDINGS"
    printf '%-34s %s\n' "chain links (rows by instance)" "$LINKS ($SPLIT)"
    printf '%-34s %s\n' "consumer at the end" "pending $C_PENDING, ack pending $C_ACKPENDING, redelivered $C_REDELIVERED, ack floor $C_ACKFLOOR"
    printf '%-34s %s\n' "faults injected" "$total:$faults"
    printf '%-34s %s\n' "unexpected exits" "$UNEXPECTED"
    printf '%-34s %s\n' "verify --public-key --full" "exit $VERIFY_RC ($VERIFY_NOTE): $VERIFY_LINE"
    printf '%-34s %s\n' "newest checkpoint cosigned" "$CKPT (size $ck; the witness cosigned $COSIGNED)"
    printf '%-34s %s\n' "witness refusals (metric)" "$REFUSED: $REFUSED_STALE stale old size for a larger checkpoint, $REFUSED_AGAIN held size resubmitted, $REFUSED_EVIDENCE evidence"
    printf '%-34s %s\n' "daemon exits on SIGTERM" "d1 $D1_EXIT, d2 $D2_EXIT"
    printf '%-34s %s\n' "d1 metrics at the end" "$D1_METRICS"
    printf '%-34s %s\n' "d2 metrics at the end (last life)" "$D2_METRICS"
    echo
    printf '%-6s %-8s %7s %10s %10s %10s %6s %6s %6s\n' daemon pid samples "RSS first" "RSS last" "RSS max" "fd 1st" "fd last" "fd max"
    awk '$1 == "LIFE" {printf "%-6s %-8s %7s %7s MB %7s MB %7s MB %6s %6s %6s\n", $2, $3, $4, $5, $6, $7, $8, $9, $10}' "$W/mem.txt"
    grep '^FLATNESS' "$W/mem.txt" | sed 's/^FLATNESS /flatness (the never-killed daemon): /'
    echo
    echo "daemon log lines at WARN and above (all lifetimes):"
    if [ -s "$W/warns.txt" ]; then cat "$W/warns.txt"; else echo "  none"; fi
    echo
    if [ ${#FAILS[@]} = 0 ]; then echo "RESULT: PASS"; else printf 'RESULT: FAIL: %s\n' "$(IFS=';'; echo "${FAILS[*]}")"; fi
} | tee "$OUT/summary.txt"
echo "details: $OUT (events.log, samples.csv, verify.txt, d1.log, d2.log, nats*.log, postgres.log, proxy.log, publisher.log)"
[ ${#FAILS[@]} = 0 ]

#!/usr/bin/env bash
# The disaster-recovery drill: each case of docs/disaster-recovery.md played against this
# machine's PostgreSQL and NATS (and, for point-in-time recovery, a PostgreSQL of its own with
# WAL archiving) with the release binary, then one table:
#
#   case | events published | events in the log | lost (named) | signed size before | after | verify exit
#
# Each case: N events signed and backed up, N more signed (an auditor's verify state and mirror
# follow), the disaster, 50 events more, the daemon restarted (it restores what it can and
# records again what the bus holds), then the auditor's verify with the state from before.
# At the end (also on failure or Ctrl-C) it drops its databases and deletes its streams.
#   scripts/dr-drill.sh [N]        (default 300; BIN=path to use another build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${1:-300}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
[ "${BIN#/}" = "$BIN" ] && BIN=$ROOT/$BIN
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
NATS=${NATS_URL:-nats://127.0.0.1:4222}
scripts/services.sh
# nats-py for the JetStream chores (scripts/soak_js.py): the system's when it has it, else in a
# virtual environment of the drill's own (as scripts/test-deps.sh installs moto), said first.
PY=python3
if ! python3 -c "import nats" 2>/dev/null; then
    VENV=$HOME/.local/share/event-audit/nats-py
    if [ ! -x "$VENV/bin/python3" ] || ! "$VENV/bin/python3" -c "import nats" 2>/dev/null; then
        echo "installing nats-py 2.16.0 (PyPI) in a virtual environment at $VENV, for the drill's JetStream chores" >&2
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check 'nats-py==2.16.0'
    fi
    PY=$VENV/bin/python3
fi
JS="$PY $ROOT/scripts/soak_js.py $NATS"
WORK=$(mktemp -d /tmp/dr-drill.XXXXXX)
ROWS=()
PIDS=()
# Every stream a case made (DR_<CASE>_<pid> and its checkpoint stream `_CP`), deleted at the end.
STREAMS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for s in "${STREAMS[@]}"; do
        "$BIN" bench delete-stream --nats-url "$NATS" --stream "$s" >/dev/null 2>&1 || true
    done
    for db in $(psql -h 127.0.0.1 -U postgres -Atc "SELECT datname FROM pg_database WHERE datname LIKE 'dr\\_%\\_$$'" postgres 2>/dev/null); do
        dropdb -h 127.0.0.1 -U postgres --if-exists --force "$db" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT

# The case's names: database, stream, directory.
setup() {
    CASE=$1
    DB=dr_${CASE}_$$
    STREAM=DR_${CASE^^}_$$
    STREAMS+=("$STREAM" "${STREAM}_CP")
    DIR=$WORK/$CASE
    PGURL=${2:-postgres://postgres@127.0.0.1:5432}/$DB
    mkdir -p "$DIR"
    "$BIN" keygen --origin "event-audit/$DB" --out "$DIR/log" >/dev/null 2>&1
    EXTRA=()
}

publish() { "$BIN" publish --nats-url "$NATS" --stream "$STREAM" --subjects "$STREAM.>" --subject "$STREAM.load" -n "$1" --seed "$2" >/dev/null 2>&1; }

run() {
    DATABASE_URL=$PGURL "$BIN" run --nats-url "$NATS" --stream "$STREAM" --subjects "$STREAM.>" \
        --consumer "${STREAM}_C" --signing-key-file "$DIR/log.key" --checkpoint-stream "${STREAM}_CP" \
        --checkpoint-interval 1h --tiles-dir "$DIR/tiles" --http-addr 127.0.0.1:0 --exit-when-idle \
        "${EXTRA[@]}" >>"$DIR/daemon.log" 2>&1
}

signed() { sed -n 2p "$DIR/tiles/checkpoint" 2>/dev/null || echo 0; }

audit() {
    set +e
    DATABASE_URL=$PGURL "$BIN" verify --public-key "$DIR/log.pub" --checkpoint-stream "${STREAM}_CP" \
        --nats-url "$NATS" --state-file "$DIR/auditor.json" >"$DIR/verify.json" 2>"$DIR/verify.err"
    local code=$?
    set -e
    echo $code
}

mirror() { "$BIN" mirror --log-url "$DIR/tiles" --public-key "$DIR/log.pub" --dir "$DIR/mirror" >/dev/null 2>&1; }

# Before the disaster: N signed and backed up, N more signed; the auditor follows.
before() {
    publish "$N" 1
    run
    audit >/dev/null
    pg_dump -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U postgres -Fc "$DB" >"$DIR/nightly.dump"
    BASE_HOOK
    publish "$N" 2
    run
    audit >/dev/null
    mirror
    BEFORE=$(signed)
}
BASE_HOOK() { :; }

restore_dump() {
    dropdb -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U postgres --force "$DB"
    createdb -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U postgres "$DB"
    pg_restore -h "${PGHOST:-127.0.0.1}" -p "${PGPORT:-5432}" -U postgres -d "$DB" "$DIR/nightly.dump"
}

# After the disaster: 50 more, the daemon restarted, the auditor's verify; one row of the table.
after() {
    publish 50 3
    run
    local code
    code=$(audit)
    local held lost
    held=$(psql "$PGURL" -Atc "SELECT count(*) FROM audit.events WHERE stream = '$STREAM'")
    lost=$(DATABASE_URL=$PGURL "$BIN" recover --nats-url "$NATS" --stream "$STREAM" --dry-run --format json 2>/dev/null \
        | python3 -c 'import json,sys; r=json.load(sys.stdin); print(",".join(f"{a}..{b}" for a,b in r["lost"]) or "none")')
    ROWS+=("$CASE|$((2 * N + 50))|$held|$lost|$BEFORE|$(signed)|$code")
}

case_pg_dump() {
    setup pg_dump; before; restore_dump; after
}

case_tiles_lost() {
    setup tiles_lost; before; restore_dump
    rm -rf "$DIR/tiles"
    EXTRA=(--restore-from "$DIR/mirror")
    after
}

case_retention() {
    setup retention; before; restore_dump
    # The stream aged out what the backup lacks, but for its last 50.
    $JS purge-below "$STREAM" $((2 * N - 50))
    after
}

case_memory_lost() {
    setup memory_lost; before; restore_dump
    rm -f "$DIR/log.key.state"
    after
}

case_recreated() {
    setup recreated; before
    $JS recreate "$STREAM" "$STREAM.>"
    after
}

# Point-in-time recovery: a PostgreSQL of the drill's own with WAL archiving; a base backup
# taken when N events were signed, replayed to its end (behind the witnessed checkpoint).
case_pitr() {
    local data=$WORK/pitr-data wal=$WORK/pitr-wal port
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$wal"
    chown postgres "$WORK" "$wal" 2>/dev/null || true
    su postgres -c "$PG_BIN/initdb -D $data -A trust -U postgres" >/dev/null
    cat >>"$data/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK'
wal_level = replica
archive_mode = on
archive_command = 'cp %p $wal/%f'
EOF
    su postgres -c "$PG_BIN/pg_ctl -D $data -l $WORK/pitr.log -w start" >/dev/null
    export PGHOST=127.0.0.1 PGPORT=$port
    setup pitr "postgres://postgres@127.0.0.1:$port"
    createdb -U postgres "$DB"
    BASE_HOOK() { su postgres -c "$PG_BIN/pg_basebackup -h 127.0.0.1 -p $port -U postgres -D $WORK/pitr-base -X none"; psql -h 127.0.0.1 -p "$port" -U postgres -Atc "SELECT pg_switch_wal()" postgres >/dev/null; }
    before
    BASE_HOOK() { :; }
    su postgres -c "$PG_BIN/pg_ctl -D $data -w stop -m fast" >/dev/null
    rm -rf "$data" && mv "$WORK/pitr-base" "$data"
    echo "restore_command = 'cp $wal/%f %p'" >>"$data/postgresql.conf"
    echo "recovery_target = 'immediate'" >>"$data/postgresql.conf"
    echo "recovery_target_action = 'promote'" >>"$data/postgresql.conf"
    touch "$data/recovery.signal" && chown postgres "$data/recovery.signal"
    su postgres -c "$PG_BIN/pg_ctl -D $data -l $WORK/pitr.log -w start" >/dev/null
    for _ in $(seq 1 60); do
        [ "$(psql -h 127.0.0.1 -p "$port" -U postgres -Atc 'SELECT pg_is_in_recovery()' postgres)" = f ] && break
        sleep 0.5
    done
    after
    su postgres -c "$PG_BIN/pg_ctl -D $data -w stop -m fast" >/dev/null
    unset PGHOST PGPORT
}

for c in pg_dump tiles_lost retention memory_lost recreated pitr; do
    "case_$c"
done

printf '%-12s | %9s | %9s | %-22s | %13s | %12s | %s\n' case published "in log" "lost (named)" "signed before" "signed after" "verify exit"
for r in "${ROWS[@]}"; do
    IFS='|' read -r c p h l b a v <<<"$r"
    printf '%-12s | %9s | %9s | %-22s | %13s | %12s | %s\n' "$c" "$p" "$h" "$l" "$b" "$a" "$v"
done

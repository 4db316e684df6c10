#!/usr/bin/env bash
# What TLS to PostgreSQL costs ingest: scripts/bench-sink.sh's stages (the database side of
# ingest: a primary-key-only COPY, the log's COPY, the daemon's sink) in plain text
# (PGSSLMODE=disable) and over TLS (PGSSLMODE=verify-full against a CA made here), alternating,
# ROUNDS times each, against one private PostgreSQL 15 this script starts (ssl = on, a server
# certificate of that CA, trust authentication over both hostssl and hostnossl, data in
# /dev/shm), so that both modes meet the same server. The server is stopped by its PID and its
# directory removed at the end.
# Usage: scripts/bench-tls.sh [N]   (default 100000 rows a stage; ROUNDS=2; BIN=another build)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
ROUNDS=${ROUNDS:-2}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
BASE=/dev/shm
[ -d "$BASE" ] && [ -w "$BASE" ] || BASE=${TMPDIR:-/tmp}
DIR=$(mktemp -d "$BASE/ea-bench-tls.XXXXXX")
PORT=$((20000 + RANDOM % 10000))
PID=
cleanup() {
    # The postmaster's own PID (runuser, which started it, does not pass signals on): a fast
    # shutdown, then wait for it to be gone.
    local pm
    pm=$(head -1 "$DIR/data/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pm" ]; then
        kill -INT "$pm" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pm" 2>/dev/null || break; sleep 0.1; done
    fi
    [ -n "$PID" ] && wait "$PID" 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
chmod 755 "$DIR"
# A CA and a server certificate for 127.0.0.1 (P-256), valid for a day.
ossl() { openssl "$@" 2>/dev/null; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj "/CN=event-audit benchmark CA" -keyout "$DIR/ca.key" -out "$DIR/ca.pem"
ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$DIR/server.key" -out "$DIR/server.csr"
ossl x509 -req -in "$DIR/server.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca.key" -CAcreateserial \
    -days 1 -copy_extensions copy -out "$DIR/server.crt"
chown postgres "$DIR" "$DIR/server.key" "$DIR/server.crt"
chmod 600 "$DIR/server.key"
runuser -u postgres -- "$PGBIN/initdb" -D "$DIR/data" -U postgres --auth=trust --no-sync \
    -E UTF8 --locale=C >/dev/null
printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 trust\n' \
    > "$DIR/data/pg_hba.conf"
runuser -u postgres -- "$PGBIN/postgres" -D "$DIR/data" -p "$PORT" -k "$DIR" \
    -c listen_addresses=127.0.0.1 -c ssl=on -c ssl_cert_file="$DIR/server.crt" \
    -c ssl_key_file="$DIR/server.key" >"$DIR/postgres.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
    PGSSLMODE=disable psql -q "postgres://postgres@127.0.0.1:$PORT/postgres" -c 'select 1' \
        >/dev/null 2>&1 && break
    sleep 0.1
done
export PG_BASE_URL="postgres://postgres@127.0.0.1:$PORT" PGSSLROOTCERT="$DIR/ca.pem"
for round in $(seq "$ROUNDS"); do
    for mode in disable verify-full; do
        echo "round $round, sslmode=$mode:"
        PGSSLMODE=$mode scripts/bench-sink.sh "$N" | grep -E '^ *\([0-9]\)'
    done
done

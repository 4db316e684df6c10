#!/usr/bin/env bash
# Recovery after a database restored from a backup, measured end to end with the release binary:
# a signed log of N events (tiles written) whose nightly backup lacks the last M; the database is
# restored from that backup and the daemon started on it. Its own lines say how long the restore
# of the M leaves from its tiles took, and how long recording the M events again from the bus
# took; this prints both as rates. Checkpoints are signed every CP_INTERVAL (5s), so that the
# tiles keep up with ingest and the last round at shutdown is short. With TILES=s3 the daemon's tiles are in a bucket of the S3
# server scripts/services.sh starts (s3s-fs; --tiles-url), and the leaves come back from there.
#   scripts/bench-recovery.sh [N] [M]      (default 1000000 200000; BIN=path for another build)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
N=${1:-1000000}
M=${2:-200000}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
[ "${BIN#/}" = "$BIN" ] && BIN=$ROOT/$BIN
NATS=${NATS_URL:-nats://127.0.0.1:4222}
scripts/services.sh
DB=bench_recovery_$$
STREAM=BENCH_RECOVERY_$$
URL=postgres://postgres@127.0.0.1:5432/$DB
WORK=$(mktemp -d /tmp/bench-recovery.XXXXXX)
S3_DATA=${S3_DATA:-/var/lib/event-audit-s3s}
BUCKET=ea-bench-recovery-$$
TILES_ARGS=(--tiles-dir "$WORK/tiles")
if [ "${TILES:-dir}" = s3 ]; then
    mkdir -p "$S3_DATA/$BUCKET"
    printf 'event-audit-test' >"$WORK/s3-id"
    printf 'event-audit-test-secret' >"$WORK/s3-secret"
    chmod 600 "$WORK/s3-id" "$WORK/s3-secret"
    printf '[object_store]\nendpoint = "%s"\npath_style = true\naccess_key_id_file = "%s"\nsecret_access_key_file = "%s"\n' \
        "${S3:-http://127.0.0.1:9000}" "$WORK/s3-id" "$WORK/s3-secret" >"$WORK/settings.toml"
    TILES_ARGS=(--tiles-url "s3://$BUCKET/tiles" --config "$WORK/settings.toml")
fi
cleanup() {
    dropdb -h 127.0.0.1 -U postgres --if-exists --force "$DB" 2>/dev/null || true
    python3 - "$NATS" "$STREAM" <<'EOF' >/dev/null 2>&1 || true
import asyncio, sys, nats
async def main(url, *streams):
    nc = await nats.connect(url)
    js = nc.jetstream()
    for s in streams:
        try:
            await js.delete_stream(s)
        except Exception:
            pass
    await nc.close()
asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[2] + "_CP"))
EOF
    rm -rf "$WORK"
    [ "${TILES:-dir}" = s3 ] && rm -rf "${S3_DATA:?}/$BUCKET"
    true
}
trap cleanup EXIT
python3 -c "import nats" 2>/dev/null || python3 -m pip install --quiet nats-py

"$BIN" keygen --origin "event-audit/$DB" --out "$WORK/log" >/dev/null 2>&1
publish() { "$BIN" publish --nats-url "$NATS" --stream "$STREAM" --subjects "$STREAM.>" --subject "$STREAM.load" -n "$1" --seed "$2" >/dev/null 2>&1; }
run() {
    DATABASE_URL=$URL "$BIN" --log-json run --nats-url "$NATS" --stream "$STREAM" --subjects "$STREAM.>" \
        --consumer "${STREAM}_C" --signing-key-file "$WORK/log.key" --checkpoint-stream "${STREAM}_CP" \
        --checkpoint-interval "${CP_INTERVAL:-5s}" "${TILES_ARGS[@]}" --http-addr 127.0.0.1:0 --exit-when-idle \
        --batch-size 2000 >"$WORK/$1.log" 2>&1
}

echo "signing $((N - M)) events, backing up, then $M more" >&2
publish $((N - M)) 1
run first
pg_dump -h 127.0.0.1 -U postgres -Fc "$DB" >"$WORK/nightly.dump"
publish "$M" 2
run second
echo "the database lost and restored from the backup" >&2
dropdb -h 127.0.0.1 -U postgres --force "$DB"
createdb -h 127.0.0.1 -U postgres "$DB"
pg_restore -h 127.0.0.1 -U postgres -d "$DB" "$WORK/nightly.dump"
run restart
python3 - "$WORK/restart.log" "$M" <<'EOF'
import json, re, sys
restored = recorded = None
for line in open(sys.argv[1]):
    try:
        msg = json.loads(line)["fields"]["message"]
    except Exception:
        continue
    m = re.search(r"leaves (\d+)\.\.(\d+) restored from .* in ([0-9.]+) s", msg)
    if m:
        restored = (int(m[2]) - int(m[1]), float(m[3]))
    m = re.search(r"(\d+) recorded, (\d+) already there, in ([0-9.]+) s", msg)
    if m:
        recorded = (int(m[1]), float(m[3]))
print(f"{'what':<36} | {'count':>9} | {'seconds':>8} | {'per second':>10}")
for what, got in (("leaves restored from the tiles", restored), ("sequences re-read from the bus", recorded)):
    if got is None:
        print(f"{what:<36} | not found in the daemon's log")
    else:
        n, s = got
        print(f"{what:<36} | {n:>9} | {s:>8.1f} | {n / s if s else 0:>10,.0f}")
EOF

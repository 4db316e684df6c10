#!/usr/bin/env bash
# `event-audit tiles fsck` over a generated log of N leaves (N random 32-byte entries, as the
# daemon's row hashes; tiles and checkpoint written by tests/tiles_reference.py, which the tests
# hold byte for byte to the project's own writer), (1) in a directory and (2) in a bucket of
# s3s-fs (scripts/services.sh starts it on 127.0.0.1:9000; the files are copied under its data
# directory, where it serves them as objects). Prints the wall time and leaves/s of each.
# Usage: scripts/bench-fsck.sh [N]   (default 1000000; env BIN=another build, S3=endpoint)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
BIN=${BIN:-target/release/event-audit}
[ "$BIN" = target/release/event-audit ] && cargo build --release --quiet --features dev
S3=${S3:-http://127.0.0.1:9000}
S3_DATA=${S3_DATA:-/var/lib/event-audit-s3s}
BUCKET="ea-bench-fsck-$$"
WORK=$(mktemp -d)
cleanup() { rm -rf "$WORK" "${S3_DATA:?}/$BUCKET"; }
trap cleanup EXIT
NAME="bench.example/fsck"
SEED=$(python3 -c "print('07' * 32)")
python3 - "$N" "$WORK/entries" <<'PY'
import os, sys
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "w") as f:
    for _ in range(n):
        f.write(os.urandom(32).hex() + "\n")
PY
python3 tests/tiles_reference.py "$WORK/entries" "$WORK/log" "$NAME" "$NAME" "$SEED"
python3 - "$NAME" "$SEED" > "$WORK/log.pub" <<'PY'
import base64, hashlib, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
name, seed = sys.argv[1], bytes.fromhex(sys.argv[2])
public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
key_id = hashlib.sha256(name.encode() + b"\x0a\x01" + public).digest()[:4]
print("%s+%s+%s" % (name, key_id.hex(), base64.b64encode(b"\x01" + public).decode()))
PY
seconds() { python3 -c "import time; print(time.monotonic())"; }
report() {  # what, start, end
    python3 -c "import sys; s=float(sys.argv[3])-float(sys.argv[2]); print('%s: %d leaves in %.2f s, %d leaves/s' % (sys.argv[1], int(sys.argv[4]), s, int(sys.argv[4])/s))" "$1" "$2" "$3" "$N"
}
t0=$(seconds)
"$BIN" tiles fsck "$WORK/log" --public-key "$WORK/log.pub"
t1=$(seconds)
report "directory" "$t0" "$t1"
mkdir -p "$S3_DATA/$BUCKET"
cp -r "$WORK/log" "$S3_DATA/$BUCKET/log"
printf 'event-audit-test' > "$WORK/s3-id"
printf 'event-audit-test-secret' > "$WORK/s3-secret"
chmod 600 "$WORK/s3-id" "$WORK/s3-secret"
cat > "$WORK/settings.toml" <<TOML
[object_store]
endpoint = "$S3"
path_style = true
access_key_id_file = "$WORK/s3-id"
secret_access_key_file = "$WORK/s3-secret"
TOML
t0=$(seconds)
"$BIN" tiles fsck "s3://$BUCKET/log" --public-key "$WORK/log.pub" --config "$WORK/settings.toml"
t1=$(seconds)
report "bucket (s3s-fs)" "$t0" "$t1"

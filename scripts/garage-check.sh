#!/usr/bin/env bash
# The object store of issue 47 checked against a real Garage: a single node started in a
# temporary directory (replication_factor = 1, path-style, region "garage"), a bucket and a key
# made with its CLI, then:
#   (1) two PUTs of one key with If-None-Match: * (boto3): does Garage refuse the second?
#   (2) `event-audit mirror --dir s3://...` with conditional_writes = "require": the probe's verdict
#   (3) the same with "read-first": mirrored, then `tiles fsck` of the bucket copy, and the
#       Cache-Control Garage keeps on a tile
#   (4) other bytes planted where the copy's first full tile goes, then a read-first mirror:
#       refused, the planted bytes kept
# Build Garage first (about 20 minutes of both cores here): `cargo install --locked garage@2.5.0`.
# Usage: scripts/garage-check.sh   (env GARAGE=the garage binary, BIN=an event-audit build,
# PY=a python with boto3 and cryptography)
set -euo pipefail
cd "$(dirname "$0")/.."
GARAGE=${GARAGE:-garage}
BIN=${BIN:-target/release/event-audit}
PY=${PY:-python3}
WORK=$(mktemp -d)
GPID=
cleanup() { [ -n "$GPID" ] && kill "$GPID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
cat > "$WORK/garage.toml" <<TOML
metadata_dir = "$WORK/meta"
data_dir = "$WORK/data"
db_engine = "sqlite"
replication_factor = 1
rpc_bind_addr = "127.0.0.1:3901"
rpc_public_addr = "127.0.0.1:3901"
rpc_secret = "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
[s3_api]
s3_region = "garage"
api_bind_addr = "127.0.0.1:3900"
TOML
g() { "$GARAGE" -c "$WORK/garage.toml" "$@"; }
"$GARAGE" -c "$WORK/garage.toml" server > "$WORK/garage.log" 2>&1 &
GPID=$!
for _ in $(seq 1 60); do (exec 3<>/dev/tcp/127.0.0.1/3900) 2>/dev/null && break; sleep 0.5; done
sleep 1
NODE=$(g node id -q 2>/dev/null | cut -d@ -f1)
g layout assign -z dc1 -c 1G "$NODE" >/dev/null
g layout apply --version 1 >/dev/null
g bucket create ea-check >/dev/null
g key create ea-check-key > "$WORK/key.txt"
KEY_ID=$(awk '/Key ID/ {print $NF}' "$WORK/key.txt")
SECRET=$(awk '/Secret key/ {print $NF}' "$WORK/key.txt")
g bucket allow --read --write --owner ea-check --key ea-check-key >/dev/null
echo "garage: $("$GARAGE" --version 2>/dev/null | head -1), node $NODE"
printf '%s' "$KEY_ID" > "$WORK/s3-id"
printf '%s' "$SECRET" > "$WORK/s3-secret"
chmod 600 "$WORK/s3-id" "$WORK/s3-secret"
settings() {  # conditional_writes
    cat > "$WORK/$1.toml" <<TOML
[object_store]
endpoint = "http://127.0.0.1:3900"
region = "garage"
path_style = true
access_key_id_file = "$WORK/s3-id"
secret_access_key_file = "$WORK/s3-secret"
conditional_writes = "$1"
TOML
}
settings require
settings read-first
export KEY_ID SECRET
s3py() {
    "$PY" - "$@" <<'PY'
import os, sys, boto3
from botocore.config import Config
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:3900", region_name="garage",
                  aws_access_key_id=os.environ["KEY_ID"], aws_secret_access_key=os.environ["SECRET"],
                  config=Config(s3={"addressing_style": "path"}))
op, key = sys.argv[1], sys.argv[2]
if op == "twice":
    s3.put_object(Bucket="ea-check", Key=key, Body=b"first", IfNoneMatch="*")
    try:
        s3.put_object(Bucket="ea-check", Key=key, Body=b"other", IfNoneMatch="*")
        body = s3.get_object(Bucket="ea-check", Key=key)["Body"].read()
        print("(1) second If-None-Match: * PUT taken; the key now holds %r" % body)
    except s3.exceptions.ClientError as e:
        print("(1) second If-None-Match: * PUT refused: %s" % e.response["Error"]["Code"])
elif op == "plant":
    s3.put_object(Bucket="ea-check", Key=key, Body=bytes(8192))
elif op == "get":
    print(len(s3.get_object(Bucket="ea-check", Key=key)["Body"].read()), "bytes, all zero:",
          set(s3.get_object(Bucket="ea-check", Key=key)["Body"].read()) == {0})
elif op == "cache":
    print("Cache-Control of %s: %s" % (key, s3.head_object(Bucket="ea-check", Key=key).get("CacheControl")))
PY
}
s3py twice probe-by-hand
# A small log of 1,000 row hashes, written by the reference writer.
NAME="garage.example/check"
SEED=$(python3 -c "print('07' * 32)")
python3 -c "import os; print('\n'.join(os.urandom(32).hex() for _ in range(1000)))" > "$WORK/entries"
python3 tests/tiles_reference.py "$WORK/entries" "$WORK/log" "$NAME" "$NAME" "$SEED"
"$PY" - "$NAME" "$SEED" > "$WORK/log.pub" <<'PY'
import base64, hashlib, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
name, seed = sys.argv[1], bytes.fromhex(sys.argv[2])
public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
key_id = hashlib.sha256(name.encode() + b"\x0a\x01" + public).digest()[:4]
print("%s+%s+%s" % (name, key_id.hex(), base64.b64encode(b"\x01" + public).decode()))
PY
ORIGIN_DIR=$(python3 -c "import hashlib,sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())" "$NAME")
mirror() {  # prefix settings
    set +e
    "$BIN" mirror --log-url "$WORK/log" --public-key "$WORK/log.pub" --dir "s3://ea-check/$1" --config "$WORK/$2.toml" 2>&1
    echo "exit $?"
    set -e
}
echo "(2) mirror with conditional_writes = require:"
mirror m require
echo "(3) mirror with conditional_writes = read-first:"
mirror m read-first
set +e
"$BIN" tiles fsck s3://ea-check/m --public-key "$WORK/log.pub" --config "$WORK/read-first.toml"
echo "tiles fsck: exit $?"
set -e
s3py cache "m/$ORIGIN_DIR/tile/0/000"
echo "(4) other bytes planted at m2/<origin>/tile/0/000, then a read-first mirror:"
s3py plant "m2/$ORIGIN_DIR/tile/0/000"
mirror m2 read-first
s3py get "m2/$ORIGIN_DIR/tile/0/000"

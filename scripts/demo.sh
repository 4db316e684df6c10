#!/usr/bin/env bash
# The first run: builds event-audit and runs `event-audit demo`: the platform simulator playing a
# migration batch with a few anomalies, a background load of catalogue events, and the daemon
# (ingest + scheduled reconciliation). Prints where to look and the reconciliation summary.
# Ctrl-C stops everything, then drops the demo's stream and database (--keep leaves them).
# PostgreSQL and NATS are started when they are not running (and left running, as the tests
# use them); the S3 test servers are not started: the demo needs no object store.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh --no-s3
cargo build --release --features dev
exec target/release/event-audit demo "$@"

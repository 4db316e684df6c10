#!/usr/bin/env bash
# The test suite: unit, property, golden and integration tests against the real PostgreSQL and
# NATS on this machine (each test makes its own database and stream and removes them). Installs
# what the tests need first (scripts/test-deps.sh) and starts the services if they are down.
# The fault suite (tests/faults/) starts its own PostgreSQL (initdb as the postgres user) and
# nats-server on free ports behind a TCP fault proxy, and never touches the shared ones.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
scripts/services.sh
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
# Four tests at a time on two cores: most of them wait on daemons, PostgreSQL and NATS rather than
# compute (the `it` binary: 474 s with two, 328 s with four, 337 s with eight, the CPU then
# saturated; BENCHMARKS.md, "The test suite").
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-4}
exec cargo test --workspace --locked --features dev "$@"

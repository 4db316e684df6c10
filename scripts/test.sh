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
# The integration tests run four at a time, the rest one a core (scripts/test-runner.sh says why).
exec cargo test --workspace --locked --features dev \
    --config "target.'cfg(all())'.runner = '$PWD/scripts/test-runner.sh'" "$@"

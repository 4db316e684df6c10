#!/usr/bin/env bash
# The test suite: unit, property, golden and integration tests against the real PostgreSQL and
# NATS on this machine (each test makes its own database and stream and removes them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/services.sh
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
exec cargo test --locked "$@"

#!/usr/bin/env bash
# Runs one test binary for scripts/test.sh (cargo's runner): the integration tests (`it`) four
# at a time, for they mostly wait on daemons, PostgreSQL and NATS (474 s with two on this 2-core
# machine, 328 s with four, 337 s with eight, the CPU then saturated); every other binary as
# cargo would, one test a core (the fault suite's tests hold statements to fixed timeouts, and
# four at a time pushed one past them). RUST_TEST_THREADS or --test-threads still win.
bin=$1
shift
if [ -z "${RUST_TEST_THREADS:-}" ]; then
    case "$(basename "$bin")" in
        it-*) export RUST_TEST_THREADS=4 ;;
    esac
fi
exec "$bin" "$@"

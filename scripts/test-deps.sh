#!/usr/bin/env bash
# Installs what the tests need, only when missing (idempotent): promtool and prometheus (alert
# rules, live scrape), chromium (reports rendered headless), curl, Go with golang.org/x/mod
# (Go's sumdb/tlog checks the log's tiles in tests/it/tiles_interop.rs), and Python's `cryptography`
# (the independent evidence-bundle verifier), and two S3-compatible servers for tests/it/blobs.rs:
# s3s-fs (cargo) and moto (PyPI, in a virtual environment under ~/.local/share/event-audit/moto:
# the one that emulates S3 Object Lock). Needs root for apt-get.
set -euo pipefail
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium fonts-dejavu-core)
command -v curl >/dev/null || need+=(curl)
[ -x /usr/bin/time ] || need+=(time)
command -v prlimit >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3)
command -v go >/dev/null || need+=(golang-go)
[ -d /usr/share/gocode/src/golang.org/x/mod/sumdb/tlog ] || need+=(golang-golang-x-mod-dev)
MOTO="$HOME/.local/share/event-audit/moto"
if [ ! -x "$MOTO/bin/moto_server" ] && ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    need+=(python3-venv)
fi
if [ ${#need[@]} -gt 0 ]; then
    echo "installing test dependencies: ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! python3 -c 'import cryptography' 2>/dev/null; then
    echo "installing Python's cryptography" >&2
    # The Debian package first (pip refuses the system Python on Debian 12), pip as a fallback.
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-cryptography; } \
        || python3 -m pip install --quiet cryptography
fi
if ! command -v s3s-fs >/dev/null && [ ! -x "$HOME/.cargo/bin/s3s-fs" ]; then
    echo "installing s3s-fs (an S3-compatible server on a directory)" >&2
    # A debug build: a test server, compiled in a third of the release build's time.
    cargo install --debug --quiet --locked s3s-fs@0.14.1 --features binary
fi
if [ ! -x "$MOTO/bin/moto_server" ]; then
    echo "installing moto's S3 server (Object Lock emulated) in $MOTO" >&2
    rm -rf "$MOTO"
    python3 -m venv "$MOTO"
    "$MOTO/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.2.5'
fi
# The witness conformance suite of the siglog crate (crates.io) and its Python packages (a venv
# under ~/.local/share/event-audit/witness-conformance): tests/it/witness_conformance.rs.
"$(dirname "$0")/witness-conformance.sh" --install
# tlog-scales (PyPI), which writes C2SP tlog-proofs from the log's tiles, in a venv under
# ~/.local/share/event-audit/tlog-scales: tests/it/tlog_proof.rs (exit 3: python3 older than
# 3.11, the test then says it is skipped and why).
"$(dirname "$0")/tlog-scales.sh" --install || [ $? -eq 3 ]
# aics-witness (PyPI), an outside witness that cosigns the daemon's checkpoints, in a venv under
# ~/.local/share/event-audit/aics-witness: tests/it/witness_aics.rs (exit 3: no Python 3.11 or
# newer, the test then says it is skipped and why).
"$(dirname "$0")/aics-witness.sh" --install || [ $? -eq 3 ]

#!/usr/bin/env bash
# Runs the witness conformance suite shipped in the siglog crate (crates.io, 0.1.0: pytest, the
# JSON cases and the test functions of its witness-conformance/ folder) against `event-audit
# witness serve`, through tests/conformance/siglog-witness-adapter.sh. Installs what it needs
# when missing (idempotent): the crate's source through `cargo fetch` in a scratch project, and
# pytest, requests and cryptography in a virtual environment under
# ~/.local/share/event-audit/witness-conformance. Usage: scripts/witness-conformance.sh [BIN]
# (default target/debug/event-audit); extra pytest arguments after `--`; `--install` only installs.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
install_only=""
if [ "${1:-}" = "--install" ]; then install_only=1; shift; fi
bin="$(realpath -m "${1:-$here/target/debug/event-audit}")"
shift || true
[ "${1:-}" = "--" ] && shift
share="$HOME/.local/share/event-audit/witness-conformance"
venv="$share/venv"
if [ ! -x "$venv/bin/pytest" ]; then
    echo "installing pytest, requests and cryptography in $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'pytest>=8' 'requests>=2.31' 'cryptography>=42'
fi
suite="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/siglog-0.1.0/witness-conformance 2>/dev/null | head -1 || true)"
if [ -z "$suite" ]; then
    echo "fetching the siglog 0.1.0 crate's source" >&2
    scratch="$share/fetch"
    mkdir -p "$scratch/src"
    printf '[package]\nname = "fetch-siglog"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nsiglog = "=0.1.0"\n' > "$scratch/Cargo.toml"
    : > "$scratch/src/lib.rs"
    (cd "$scratch" && cargo fetch --quiet)
    suite="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/siglog-0.1.0/witness-conformance | head -1)"
fi
[ -n "$install_only" ] && exit 0
# A copy, so that the suite's own writes (.test_log_info, caches) stay out of cargo's registry.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$suite/." "$work/"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
cd "$work"
EVENT_AUDIT_BIN="$bin" "$venv/bin/pytest" -q -p no:cacheprovider \
    --entrypoint="$here/tests/conformance/siglog-witness-adapter.sh" --port="$port" "$@"

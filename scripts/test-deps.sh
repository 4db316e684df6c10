#!/usr/bin/env bash
# Installs what the tests need, only when missing (idempotent): promtool and prometheus (alert
# rules, live scrape), chromium (reports rendered headless), curl, Go with golang.org/x/mod
# (Go's sumdb/tlog checks the log's tiles in tests/it/tiles_interop.rs), and Python's `cryptography`
# (the independent evidence-bundle verifier). Needs root for apt-get.
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

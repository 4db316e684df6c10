#!/usr/bin/env bash
# Installs what the tests need, only when missing (idempotent): promtool and prometheus (alert
# rules, live scrape), chromium (reports rendered headless), curl, and Python's `cryptography`
# (the independent evidence-bundle verifier). Needs root for apt-get.
set -euo pipefail
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium fonts-dejavu-core)
command -v curl >/dev/null || need+=(curl)
command -v python3 >/dev/null || need+=(python3)
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

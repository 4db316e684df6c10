#!/usr/bin/env bash
# Runs tlog-scales (PyPI, 0.0.3: Python tooling for C2SP tlog-tiles logs, by another author) as
# its `tlog-tiles` command, e.g. `scripts/tlog-scales.sh gen-proof DIR INDEX` writes a C2SP
# tlog-proof read from the log's tiles in DIR. Installs it when missing (idempotent) in a virtual
# environment under ~/.local/share/event-audit/tlog-scales. It needs Python 3.11 or newer: with
# an older python3 this says so on stderr and exits 3. `--install` only installs.
set -euo pipefail
venv="$HOME/.local/share/event-audit/tlog-scales/venv"
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    echo "tlog-scales 0.0.3 needs Python 3.11 or newer; this machine's python3 is $(python3 -V 2>&1)" >&2
    exit 3
fi
if [ ! -x "$venv/bin/tlog-tiles" ]; then
    echo "installing tlog-scales 0.0.3 in $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'tlog-scales==0.0.3'
fi
if [ "${1:-}" = "--install" ]; then exit 0; fi
exec "$venv/bin/tlog-tiles" "$@"
